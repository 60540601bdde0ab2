-- sliding_log: an exact sliding window. A sorted set holds one member per
-- recorded request, scored by its time in microseconds; a request is allowed
-- while fewer than `limit` members lie within the last `window` of time.
-- The set never holds more than `limit` members: a denied request is not
-- recorded, and when a policy's limit is lowered the oldest members beyond
-- it are trimmed (which keeps the same answers: only the newest `limit`
-- members can ever decide one). Memory: about 80 bytes per member.
--
-- peek(p, now) fills p.allowed, p.remaining, p.retry_ms, p.reset_ms without
-- recording; charge(p, now) records one request as p.member. `p` carries
-- key, limit, window_us, member; `now` is microseconds from Redis TIME.
local sliding_log = {}

function sliding_log.peek(p, now)
  local key = p.key
  -- Most keys a check touches are new (ZCARD 0): only a non-empty log
  -- needs its expired members removed.
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
  -- reset_ms: until the newest member expires. Left unset here: a charge
  -- makes it the whole window, and only an uncharged policy needs the
  -- lookup (the driver then calls reset), which saves a call per check.
  if count == 0 then

    p.reset_ms = 0
  end
  if count < p.limit then
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

sliding_log.reset = set_reset


function sliding_log.charge(p, now)

  redis.call('ZADD', p.key, int(now), p.member)
  redis.call('PEXPIRE', p.key, ms(p.window_us))
  p.count = p.count + 1
  p.remaining = p.limit - p.count
  p.reset_ms = ms(p.window_us)
end
