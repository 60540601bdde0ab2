-- fixed_window: a counter per window of `window` length, aligned to the
-- Unix epoch. One string key per identity holds the current window's count
-- and expires exactly at the window's end (INCR and PEXPIREAT in the same
-- script), so the next window starts from nothing and no key lives without
-- a TTL. Memory: one small string per key, whatever the limit.
-- Across a window boundary up to twice `limit` requests can pass in less
-- than one window: that is the algorithm's known price for O(1) state.
local fixed_window = {}

function fixed_window.peek(p, now)
  local window_end = (math.floor(now / p.window_us) + 1) * p.window_us
  local count = tonumber(read('GET', p.key) or '0') or 0
  p.count = count
  p.window_end = window_end
  local left_ms = ms(window_end - now)
  p.reset_ms = count > 0 and left_ms or 0
  if count < p.limit then
    p.allowed = true
    p.remaining = p.limit - count
    p.retry_ms = 0
  else
    p.allowed = false
    p.remaining = 0
    p.retry_ms = left_ms
  end
end

function fixed_window.charge(p, now)
  p.count = redis.call('INCR', p.key)
  redis.call('PEXPIREAT', p.key, int(math.ceil(p.window_end / 1000)))
  p.remaining = math.max(p.limit - p.count, 0)
  p.reset_ms = ms(p.window_end - now)
end

algorithms['1'] = fixed_window
