-- SPDX-License-Identifier: Apache-2.0
-- fixed_window: a counter per window of `window` length, aligned to the
-- Unix epoch. A hash per identity holds the window's index `i` (now /
-- window, rounded down) with its count `n`; a count under another index is
-- an old window's and counts as nothing. The key expires at the window's
-- end only to free it: Redis treats a key as expired once the current
-- millisecond is past its expiry time, so for a whole millisecond after
-- the window ends the old count is still there to be read (issue 13), and
-- the index, not the expiry, decides. Field names differ from
-- sliding_window's, which keeps a hash too, so that after an admin changes
-- a policy's algorithm neither reads the other's state. Memory: one hash of
-- two small fields per key, whatever the limit.
-- Across a window boundary up to twice `limit` requests can pass in less
-- than one window: that is the algorithm's known price for O(1) state.
local fixed_window = {}

-- peek hands charge the window's index and count.
function fixed_window.peek(key, limit, window_us, member, now)
  local idx = math.floor(now / window_us)
  local h = read(key, rpcall('HMGET', key, 'i', 'n')) or {}
  local count = 0
  if tonumber(h[1]) == idx then
    count = tonumber(h[2]) or 0
  end
  local left_ms = ms((idx + 1) * window_us - now)
  local reset_ms = count > 0 and left_ms or 0
  if count < limit then
    return true, limit - count, 0, reset_ms, idx, count
  end
  return false, 0, left_ms, reset_ms, idx, count
end

function fixed_window.charge(key, limit, window_us, window_ms, member, now,
                             idx, count)
  local window_end = (idx + 1) * window_us
  count = count + 1
  rcall('HSET', key, 'i', int(idx), 'n', int(count))
  rcall('PEXPIREAT', key, int(ceil(window_end / 1000)))
  return math.max(limit - count, 0), ms(window_end - now), idx
end

-- Undo: the index of the window the charge counted in (never 0: that
-- window ended a window after the Unix epoch). Only that window's count
-- goes down: once the window has moved on, the count is another window's
-- and is left alone. The key keeps its expiry, the window's end.
function fixed_window.release(key, limit, window_us, member, nonce, undo,
                              now)
  local h = read(key, rpcall('HMGET', key, 'i', 'n')) or {}
  local count = tonumber(h[2]) or 0
  if tonumber(h[1]) ~= undo or count <= 0 then
    return false
  end
  rcall('HSET', key, 'n', int(count - 1))
  return true
end
