-- SPDX-License-Identifier: Apache-2.0
-- sliding_log: an exact sliding window. A sorted set holds one member per
-- recorded request, scored by its time in microseconds; a request is allowed
-- while fewer than `limit` members lie within the last `window` of time.
-- The set never holds more than `limit` members: a denied request is not
-- recorded, and a lowered limit trims the oldest (set_count). Memory: about
-- 80 bytes per member. The interface is described in common.lua; peek hands
-- charge the live count.
local sliding_log = {}

function sliding_log.peek(key, limit, window_us, member, now)
  local count = set_count(key, limit, window_us, now)
  if count < limit then -- set_answer's allowed case, without the call
    return true, limit - count, 0, count == 0 and 0, count
  end
  local allowed, remaining, retry_ms, reset_ms =
    set_answer(key, limit, window_us, now, count, false)
  return allowed, remaining, retry_ms, reset_ms, count
end

function sliding_log.charge(key, limit, window_us, window_ms, member, now,
                            count)
  set_add(key, window_ms, member)
  return limit - count - 1, ms(window_us), 1
end

sliding_log.reset = set_reset

-- A reserve's member is its nonce: removing it leaves the set as it was
-- (an empty set is no key). A nonce not in the set removes nothing.
function sliding_log.release(key, limit, window_us, member, nonce, undo, now)
  return read(key, rpcall('ZREM', key, nonce)) == 1
end
