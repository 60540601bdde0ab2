-- SPDX-License-Identifier: Apache-2.0
-- check: the driver. Evaluates the policies of one request atomically.
-- The service composes the function library (Redis 7 and later) from
-- common.lua, every algorithm file (each registered in `algorithms` by
-- the service), then this file as the body of `local function check(KEYS,
-- ARGV, k0, nk, a0, na, now)` (and release.lua, the undo of mode
-- "reserve", as another); and, where Redis refuses functions, scripts of
-- common.lua, the algorithm files a check's policies use, `local k0, nk,
-- a0, na, now`, then this file (service/redis/ag_redis_code.c).
--
-- Redis runs it with k0 nil: the check is the whole of KEYS and ARGV, at
-- the clock's time. A batch of checks in one call (bench/batch.lua,
-- issue 20's experiment, which the service does not send) runs it over a
-- slice: keys KEYS[k0 + 1] to KEYS[k0 + nk], arguments ARGV[a0 + 1] to
-- ARGV[a0 + na], at now, microseconds (now_text's number), the batch
-- having set now_text and the locals common.lua leaves to the driver.
--
-- Mode "check" (a check endpoint): every policy is evaluated, and the
-- attempt is recorded only if no enforcing policy denies it ("all or
-- nothing"): a denied attempt never reaches the password check or the SMS
-- gateway, so it is charged to no policy. A denying policy with block_ms
-- sets its block key.
-- Mode "reserve" (one slot group of a check on Redis Cluster): exactly
-- mode "check", and each policy also reports its undo token, what its
-- charge returned for release.lua to undo it with (0: not charged, nothing
-- to undo), should another group of the check deny.
-- Mode "peek" (the admin inspect): every policy is evaluated exactly as
-- in mode "check", and nothing at all is written: no charge, no block, no
-- level, no expiry touched, not even a check's housekeeping (common.lua's
-- `peeking`). remaining is what is left now, before any attempt; allowed
-- whether the next attempt would be; retry_ms, of a denying policy, how
-- long until one would be allowed if none is made meanwhile (a block the
-- next attempt would set is not set, so not counted). Each policy also
-- reports its running block's milliseconds left (0: none) and its block
-- level (the blocks in a row so far, block_level_of; 0 but for a policy
-- whose blocks grow).
-- Mode "record" (a reported event: a login failure; a verified code, for
-- conversion): each policy records the event unless it is already full or
-- blocked (an algorithm that records_blocked, conversion, records it even
-- blocked); none depends on another. An algorithm that counts reported
-- events apart from checks reads common.lua's `recording`. A
-- failure whose password fingerprint (ARGV[3]) is one of the user's last
-- three within its window records in no policy (fingerprint_seen).
--
-- The layout, of a slice (KEYS[i] below is KEYS[k0 + i], ARGV[i] is
-- ARGV[a0 + i]):
-- KEYS: per policy in order, its state key; then, only if its block_ms is
--   above 0, its block key; then, only if its growth is also above 1, its
--   level key. Last, only if ARGV[3] is not empty, the user's fingerprint
--   set.
-- ARGV[1] nonce, unique per request    ARGV[2] mode
-- Record mode only (a check's arguments are as they were before there
-- were fingerprints): ARGV[3] the keyed digest of the user and the
-- password fingerprint, or empty; ARGV[4] how long it is remembered, ms.
-- ARGV[b + 2i], b = 1 for a check and 3 for a record: policy i's spec,
--   "algorithm limit window_ms block_ms charge shadow", then, only if
--   block_ms is above 0, " growth block_max_ms", then, only for an
--   algorithm that needs_ratio (conversion), " r" and its min_ratio in
--   parts per million (1 to 1000000); numbers in decimal (see spec_of)
--   algorithm: its enum ag_algorithm value (service/engine/ag_policy.h), the
--              code the service registers its table under
--   charge:    1 to record the request when it is allowed
--   shadow:    1 if the policy may never deny (it reports only)
--   growth:    each block of a row lasts this many times the one before
--              (0 or 1: no growth, no level key), up to block_max_ms
--   ppm:       conversion only: a send is judged allowed while verified
--              / sends >= ppm / 1000000
-- ARGV[b + 1 + 2i] policy i's member: distinct only, the keyed hash of the
--   subject; empty for the others
-- Returns 4n integers, per policy: allowed (1/0), remaining, retry_after_ms,
-- reset_after_ms; in mode "reserve" 5n, each policy's undo token after
-- them; in mode "peek" 6n, each policy's blocked_ms and block level after
-- them. In modes "check+h" and "reserve+h" (those modes, with the user's
-- history key last in KEYS), two strings after the integers: the history
-- (GET; '' for none) and the check's clock, now_text.

-- A log member is the nonce alone: the score already holds the time, and
-- the nonce (instance id, then a sequence number) is unique on its own.
if not k0 then
  rcall, rpcall, type_of, ceil = redis.call, redis.pcall, type, math.ceil
  k0, nk, a0, na = 0, #KEYS, 0, #ARGV
  now_text = clock()
  now = tonumber(now_text)
end
local log_member = ARGV[a0 + 1]
if na % 2 ~= 0 then
  error('bad argument count: ' .. na)
end
local mode = ARGV[a0 + 2]
-- "check+h" and "reserve+h": the mode, and the last key is the user's
-- history (issue 40), read for the service in this same call.
local history = false
if mode == 'check+h' or mode == 'reserve+h' then
  history = KEYS[k0 + nk]
  mode = mode == 'check+h' and 'check' or 'reserve'
end
local record = mode == 'record'
recording = record
local reserve = mode == 'reserve'
local peek = mode == 'peek'
peeking = peek
local w = reserve and 5 or peek and 6 or 4 -- the reply's integers per policy
-- Where the policies' arguments begin, in ARGV (ARGV[b + 2i], below).
local b = a0 + (record and 3 or 1)
local n = (na - (b - a0) - 1) / 2
-- A failure with a repeated fingerprint charges nothing: as if every
-- policy's charge were 0.
local repeated = record and ARGV[a0 + 3] ~= '' and
  fingerprint_seen(KEYS[k0 + nk], ARGV[a0 + 3],
                   tonumber(ARGV[a0 + 4]) * 1000, ARGV[a0 + 4], now)

-- Two flat arrays carry the policies from the first pass to the second:
-- out is the reply (allowed, remaining, retry_ms, reset_ms per policy,
-- and in mode reserve the undo token; allowed a boolean and reset_ms
-- possibly false until the end), and kept
-- holds per policy its spec, the block key's remaining TTL, then the four
-- values its peek hands its charge (false for those it does not use).
-- Both are built at their full size by a constructor: a table grown an
-- element at a time is rehashed at every power of two, and a nil stored
-- into one still inserts a key; either costs Redis more than a command
-- does. The values the constructors copy in are all overwritten.
local out = {unpack(KEYS, 1, w * n)}
local kept = {unpack(KEYS, 1, 6 * n)}
local denied = false
local k = k0 + 1 -- the next policy's first key
for i = 1, n do
  local spec = ARGV[b + 2 * i]
  local p = specs[spec] or spec_of(spec)
  local key = KEYS[k]
  local blocked_ms, level = 0, 0
  if p[5] == '0' then
    k = k + 1
  else
    blocked_ms = blocked_ms_of(KEYS[k + 1], now)
    if peek and p[8] > 1 then
      level = block_level_of(KEYS[k + 2], now)
    end
    k = k + (p[8] > 1 and 3 or 2)
  end
  local member = ARGV[b + 1 + 2 * i]
  if member == '' then
    member = log_member
  end
  local allowed, remaining, retry_ms, reset_ms, s1, s2, s3, s4 =
    p[1].peek(key, p[2], p[3], member, now, p[10])
  if blocked_ms > 0 and not (record and p[1].records_blocked) then
    allowed = false
    remaining = 0
    retry_ms = math.max(retry_ms, blocked_ms)
  end
  if not allowed and not p[7] then
    denied = true
  end
  local o, s = w * (i - 1) + 4, 6 * i
  out[o - 3], out[o - 2], out[o - 1], out[o] =
    allowed, remaining, retry_ms, reset_ms
  if reserve then
    out[o + 1] = 0
  elseif peek then
    out[o + 1], out[o + 2] = blocked_ms, level
  end
  kept[s - 5], kept[s - 4] = p, blocked_ms
  kept[s - 3], kept[s - 2] = s1 or false, s2 or false
  kept[s - 1], kept[s] = s3 or false, s4 or false
end

k = k0 + 1
for i = 1, n do
  local o, s = w * (i - 1) + 4, 6 * i
  local p = kept[s - 5]
  local algorithm = p[1]
  local key = KEYS[k]
  local block_key, level_key = p[5] ~= '0' and KEYS[k + 1], false
  if not block_key then
    k = k + 1
  elseif p[8] > 1 then
    level_key = KEYS[k + 2]
    k = k + 3
  else
    k = k + 2
  end
  local allowed = out[o - 3]
  if peek then
    -- A peek charges nothing and blocks nothing.
  elseif (record or not denied) and allowed and p[6] and not repeated then
    local member = ARGV[b + 1 + 2 * i]
    if member == '' then
      member = log_member
    end
    local undo
    out[o - 2], out[o], undo =
      algorithm.charge(key, p[2], p[3], p[4], member, now, kept[s - 3],
                       kept[s - 2], kept[s - 1], kept[s])
    if reserve then
      out[o + 1] = undo
    end
  elseif not record and not allowed and not p[7] and block_key
      and kept[s - 4] <= 0 then
    out[o - 1] = math.max(out[o - 1], block_for(block_key, level_key, p, now))
  end
  if not out[o] then
    out[o] = algorithm.reset(key, p[3], now)
  end
  out[o - 3] = allowed and 1 or 0
end
if history then
  out[w * n + 1] = rcall('GET', history) or ''
  out[w * n + 2] = now_text
end
return out
