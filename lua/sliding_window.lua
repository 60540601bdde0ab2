-- SPDX-License-Identifier: Apache-2.0
-- sliding_window: the sliding-window counter. A hash per identity holds the
-- current fixed window's index `w`, its count `c` and the previous window's
-- count `p`. The rate estimate weights the previous window by the share of
-- it that still overlaps the sliding window ending now:
--     estimate = p * (1 - elapsed / window) + c
-- and a request is allowed when estimate + 1 <= limit (so the estimate never
-- passes the limit). The key expires at the end of the next window, after
-- which its counts could no longer matter. Memory: one hash of three small
-- fields per key, whatever the limit.
local sliding_window = {}

-- peek hands charge the window index, both counts and the estimate.
function sliding_window.peek(key, limit, w, member, now)
  local idx = math.floor(now / w)
  local h = read(key, rpcall('HMGET', key, 'w', 'c', 'p')) or {}
  local cw, cc, pc = tonumber(h[1]), tonumber(h[2]) or 0, tonumber(h[3]) or 0
  if cw == idx - 1 then
    pc, cc = cc, 0
  elseif cw ~= idx then
    pc, cc = 0, 0
  end
  local elapsed = now - idx * w
  local est = pc * (1 - elapsed / w) + cc
  local reset_ms
  if cc > 0 then
    reset_ms = ms((idx + 2) * w - now)
  elseif pc > 0 then
    reset_ms = ms((idx + 1) * w - now)
  else
    reset_ms = 0
  end
  if est + 1 <= limit then
    return true, math.floor(limit - est), 0, reset_ms, idx, cc, pc, est
  end
  local retry_ms
  if cc + 1 <= limit then
    -- This window: wait until the previous window's weight falls enough.
    local need = w * (1 - (limit - 1 - cc) / pc)
    retry_ms = ms(math.max(need - elapsed, 1))
  else
    -- Only the next window can admit it, once this one's weight falls.
    local need = w * (1 - (limit - 1) / cc)
    retry_ms = ms(w - elapsed + need)
  end
  return false, 0, retry_ms, reset_ms, idx, cc, pc, est
end

function sliding_window.charge(key, limit, w, window_ms, member, now,
                               idx, cc, pc, est)
  cc = cc + 1
  rcall('HSET', key, 'w', int(idx), 'c', int(cc), 'p', int(pc))
  rcall('PEXPIREAT', key, int(ceil((idx + 2) * w / 1000)))
  return math.max(math.floor(limit - (est + 1)), 0), ms((idx + 2) * w - now),
    idx
end

-- Undo: the index of the window the charge counted in. Its count is `c`
-- while the hash's window `w` is that one, `p` once a later charge has
-- moved the hash on by one; older than that it weighs nothing any more and
-- is left alone. Never below 0.
function sliding_window.release(key, limit, w, member, nonce, undo, now)
  local h = read(key, rpcall('HMGET', key, 'w', 'c', 'p')) or {}
  local cw = tonumber(h[1])
  local field
  if cw == undo then
    field = 'c'
  elseif cw == undo + 1 then
    field = 'p'
  else
    return false
  end
  local count = tonumber(h[field == 'c' and 2 or 3]) or 0
  if count <= 0 then
    return false
  end
  rcall('HSET', key, field, int(count - 1))
  return true
end
