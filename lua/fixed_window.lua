-- fixed_window: a counter per window of `window` length, aligned to the
-- Unix epoch. One string key per identity holds the current window's count
-- and expires exactly at the window's end (INCR and PEXPIREAT in the same
-- script), so the next window starts from nothing and no key lives without
-- a TTL. Memory: one small string per key, whatever the limit.
-- Across a window boundary up to twice `limit` requests can pass in less
-- than one window: that is the algorithm's known price for O(1) state.
local fixed_window = {}

-- peek hands charge the window's end in microseconds.
function fixed_window.peek(key, limit, window_us, member, now)
  local window_end = (math.floor(now / window_us) + 1) * window_us
  local count = tonumber(read(key, rpcall('GET', key)) or '0') or 0
  local left_ms = ms(window_end - now)
  local reset_ms = count > 0 and left_ms or 0
  if count < limit then
    return true, limit - count, 0, reset_ms, window_end
  end
  return false, 0, left_ms, reset_ms, window_end
end

function fixed_window.charge(key, limit, window_us, window_ms, member, now,
                             window_end)
  local count = rcall('INCR', key)
  rcall('PEXPIREAT', key, int(ceil(window_end / 1000)))
  return math.max(limit - count, 0), ms(window_end - now)
end
