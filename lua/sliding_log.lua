-- sliding_log: an exact sliding window. A sorted set holds one member per
-- recorded request, scored by its time in microseconds; a request is allowed
-- while fewer than `limit` members lie within the last `window` of time.
-- The set never holds more than `limit` members: a denied request is not
-- recorded, and a lowered limit trims the oldest (set_peek). Memory: about
-- 80 bytes per member.
--
-- peek(p, now) fills p.allowed, p.remaining, p.retry_ms (and p.reset_ms
-- when it is free to know) without recording; charge(p, now) records one
-- request as p.member; reset(p, now) answers p.reset_ms when peek left it
-- unset. `p` carries key, limit, window_us, member; `now` is microseconds
-- from Redis TIME.
local sliding_log = {}

function sliding_log.peek(p, now)
  set_peek(p, now)
  set_decide(p, now, p.count < p.limit)
end

sliding_log.reset = set_reset

function sliding_log.charge(p, now)
  set_add(p, now, p.member)
  p.count = p.count + 1
  p.remaining = p.limit - p.count
end

algorithms['0'] = sliding_log
