-- SPDX-License-Identifier: Apache-2.0
-- consecutive: failures in a row, with no window (NIST SP 800-63B's cap on
-- consecutive failed attempts). Only failure reports record (a policy of
-- it must count failures), a check is denied once the count reaches
-- `limit`, and a successful login clears the key (the service's success
-- plan holds every consecutive policy). So that Redis holds nothing
-- forever, `window` is an idle expiry: a count whose last failure is a
-- window old is no count. A hash per identity holds the count `f` and the
-- time `l` of the last failure, fields no other algorithm names; the time,
-- not the key's expiry, decides. Memory: one hash of two small fields.
-- Denied, retry_ms is until the idle expiry, the latest a denial can end
-- on its own (a success ends it sooner); reset_ms is until then too.
-- While the count is at the limit a failure is not recorded (the driver's
-- rule for a full policy), so it does not push the expiry further.
local consecutive = {}

-- peek hands charge the count.
function consecutive.peek(key, limit, window_us, member, now)
  local h = read(key, rpcall('HMGET', key, 'f', 'l')) or {}
  local last = tonumber(h[2])
  if not last or now >= last + window_us then
    return true, limit, 0, 0, 0
  end
  local count = tonumber(h[1]) or 0
  local left_ms = ms(last + window_us - now)
  if count < limit then
    return true, limit - count, 0, left_ms, count
  end
  return false, 0, left_ms, left_ms, count
end

function consecutive.charge(key, limit, window_us, window_ms, member, now,
                            count)
  count = count + 1
  rcall('HSET', key, 'f', int(count), 'l', now_text)
  expire_at(key, now + window_us)
  return limit - count, ms(window_us), 0
end

-- Undo 0, and nothing to release: a consecutive policy counts failures
-- only (ag_policy.c refuses any other), so a check, and so a reserve,
-- never charges it; only a failure report, which is not reserved, does.
function consecutive.release(key, limit, window_us, member, nonce, undo,
                             now)
  return false
end
