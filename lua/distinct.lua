-- distinct: how many different subjects (users for login, phones for OTP)
-- one key (an IP, say) has tried within the last `window`. A sorted set per
-- key holds the subjects' keyed hashes, never the subjects, scored by when
-- each was last seen. A request for a subject already in the set is
-- allowed; a new one is allowed while fewer than `limit` are. The set never
-- holds more than `limit` members, so memory is bounded by the limit
-- (about 100 bytes a member). Same bookkeeping as sliding_log.
local distinct = {}

function distinct.peek(p, now)
  set_peek(p, now)
  p.known = redis.call('ZSCORE', p.key, p.member) ~= false
  set_decide(p, now, p.known or p.count < p.limit)
end

distinct.reset = set_reset

function distinct.charge(p, now)
  set_add(p, now, p.member)
  if not p.known then
    p.count = p.count + 1
  end
  p.remaining = p.limit - p.count
end

algorithms['4'] = distinct
