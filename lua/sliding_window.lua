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

function sliding_window.peek(p, now)
  local w = p.window_us
  local idx = math.floor(now / w)
  local h = read('HMGET', p.key, 'w', 'c', 'p') or {}
  local cw, cc, pc = tonumber(h[1]), tonumber(h[2]) or 0, tonumber(h[3]) or 0
  if cw == idx - 1 then
    pc, cc = cc, 0
  elseif cw ~= idx then
    pc, cc = 0, 0
  end
  local elapsed = now - idx * w
  local est = pc * (1 - elapsed / w) + cc
  p.idx, p.cc, p.pc = idx, cc, pc
  p.est = est
  if cc > 0 then
    p.reset_ms = ms((idx + 2) * w - now)
  elseif pc > 0 then
    p.reset_ms = ms((idx + 1) * w - now)
  else
    p.reset_ms = 0
  end
  if est + 1 <= p.limit then
    p.allowed = true
    p.remaining = math.floor(p.limit - est)
    p.retry_ms = 0
    return
  end
  p.allowed = false
  p.remaining = 0
  if cc + 1 <= p.limit then
    -- This window: wait until the previous window's weight falls enough.
    local need = w * (1 - (p.limit - 1 - cc) / pc)
    p.retry_ms = ms(math.max(need - elapsed, 1))
  else
    -- Only the next window can admit it, once this one's weight falls.
    local need = w * (1 - (p.limit - 1) / cc)
    p.retry_ms = ms(w - elapsed + need)
  end
end

function sliding_window.charge(p, now)
  local w = p.window_us
  p.cc = p.cc + 1
  redis.call('HSET', p.key, 'w', int(p.idx), 'c', int(p.cc), 'p', int(p.pc))
  redis.call('PEXPIREAT', p.key, int(math.ceil((p.idx + 2) * w / 1000)))
  p.est = p.est + 1
  p.remaining = math.max(math.floor(p.limit - p.est), 0)
  p.reset_ms = ms((p.idx + 2) * w - now)
end

algorithms['2'] = sliding_window
