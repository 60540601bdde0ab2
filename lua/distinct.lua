-- distinct: how many different subjects (users for login, phones for OTP)
-- one key (an IP, say) has tried within the last `window`. A sorted set per
-- key holds the subjects' keyed hashes, never the subjects, scored by when
-- each was last seen. A request for a subject already in the set is
-- allowed; a new one is allowed while fewer than `limit` are. The set never
-- holds more than `limit` members, so memory is bounded by the limit
-- (about 100 bytes a member).
local distinct = {}

function distinct.peek(p, now)
  local key = p.key
  local count = read('ZCARD', key) or 0
  if count > 0 then
    count = count - redis.call('ZREMRANGEBYSCORE', key, '-inf',
                               int(now - p.window_us))
  end

  if count > p.limit then
    redis.call('ZREMRANGEBYRANK', key, 0, count - p.limit - 1)
    count = p.limit
  end
  p.count = count
  p.known = redis.call('ZSCORE', key, p.member) ~= false
  if count == 0 then
    p.reset_ms = 0 -- else set_reset, only if the driver needs it
  end
  if p.known or count < p.limit then
    p.allowed = true
    p.remaining = p.limit - count
    p.retry_ms = 0
  else
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    p.allowed = false
    p.remaining = 0
    p.retry_ms = ms(tonumber(oldest[2]) + p.window_us - now)
  end
end

distinct.reset = set_reset


function distinct.charge(p, now)

  redis.call('ZADD', p.key, int(now), p.member)
  redis.call('PEXPIRE', p.key, ms(p.window_us))
  if not p.known then
    p.count = p.count + 1
  end
  p.remaining = p.limit - p.count
  p.reset_ms = ms(p.window_us)
end
