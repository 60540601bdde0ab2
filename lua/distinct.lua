-- SPDX-License-Identifier: Apache-2.0
-- distinct: how many different subjects (users for login, phones for OTP)
-- one key (an IP, say) has tried within the last `window`. A sorted set per
-- key holds the subjects' keyed hashes, never the subjects, scored by when
-- each was last seen. A request for a subject already in the set is
-- allowed; a new one is allowed while fewer than `limit` are. The set never
-- holds more than `limit` members, so memory is bounded by the limit
-- (about 100 bytes a member). Same bookkeeping as sliding_log
-- (common.lua); peek hands charge the live count and whether the subject
-- is known.
local distinct = {}

function distinct.peek(key, limit, window_us, member, now)
  local count = set_count(key, limit, window_us, now)
  local known
  if peeking then
    -- Known only among the members set_count counted, as a check, which
    -- removes the others first, would find it; a key of another type
    -- (left, not deleted) knows no one.
    local rank = read(key, rpcall('ZRANK', key, member))
    known = rank ~= nil and rank ~= false and rank >= set_skip
  elseif count > 0 then
    known = rcall('ZSCORE', key, member) ~= false
  else
    -- Nothing live, and set_count removed what was not: an empty set (or
    -- none) knows no one, without asking (issue 41).
    known = false
  end
  local allowed, remaining, retry_ms, reset_ms =
    set_answer(key, limit, window_us, now, count, known or count < limit)
  return allowed, remaining, retry_ms, reset_ms, count, known
end

function distinct.charge(key, limit, window_us, window_ms, member, now,
                         count, known)
  set_add(key, window_ms, member)
  if not known then
    count = count + 1
  end
  return limit - count, ms(window_us), known and 0 or 1
end

distinct.reset = set_reset

-- Undo 1: the charge added the subject, which goes again. A known subject
-- (undo 0) is not released: it was counted before this check, and stays;
-- only its last-seen time, which the charge refreshed, is not restored.
function distinct.release(key, limit, window_us, member, nonce, undo, now)
  return undo == 1 and read(key, rpcall('ZREM', key, member)) == 1
end
