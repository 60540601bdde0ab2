-- SPDX-License-Identifier: Apache-2.0
-- release: the second driver of the function library (library only: no
-- script holds it, service/redis/ag_redis_code.c). Undoes exactly what a check
-- in mode "reserve" (check.lua) charged, for one slot group of a check on
-- Redis Cluster whose other group denied: so that a check some policy
-- denies is charged to no policy, across groups as within one. Blocks a
-- denying policy set are the denial's, and stay; a release of state that
-- has expired, been cleared or moved on since undoes nothing there.
--
-- KEYS: per policy in order, its state key (no block or level keys: a
--   release touches neither).
-- ARGV[1] the reserve's nonce (a sliding log's member)
-- ARGV[3i - 1] policy i's spec, the same text as its reserve's
-- ARGV[3i]     policy i's member, as its reserve's (empty but for distinct)
-- ARGV[3i + 1] policy i's undo token from the reserve, decimal; 0: the
--   reserve did not charge it, nothing to release
-- Each policy with a token runs its algorithm's release (common.lua).
-- Returns the number of policies whose release undid something.
rcall, rpcall, type_of, ceil = redis.call, redis.pcall, type, math.ceil
-- Set by the last check.lua run in this library (a peek sets it): a
-- release writes, so the housekeeping a peek skips (a key of another type
-- deleted) must run here.
peeking = false
local nonce = ARGV[1]
if #ARGV % 3 ~= 1 or #KEYS ~= (#ARGV - 1) / 3 then
  error('bad argument count: ' .. #KEYS .. ' keys, ' .. #ARGV .. ' args')
end
local released = 0
local now
for i = 1, #KEYS do
  local undo = tonumber(ARGV[3 * i + 1])
  if not undo then
    error('bad undo token: ' .. ARGV[3 * i + 1])
  end
  if undo ~= 0 then
    if not now then -- a release of nothing reads no clock
      now_text = clock()
      now = tonumber(now_text)
    end
    local spec = ARGV[3 * i - 1]
    local p = specs[spec] or spec_of(spec)
    if p[1].release(KEYS[i], p[2], p[3], ARGV[3 * i], nonce, undo, now) then
      released = released + 1
    end
  end
end
return released
