-- check: the driver. Evaluates the policies of one request atomically.
-- A composed script is common.lua, the algorithm files its policies use
-- (they register in `algorithms`), then this file.
--
-- Mode "check" (a check endpoint): every policy is evaluated, and the
-- attempt is recorded only if no enforcing policy denies it ("all or
-- nothing"): a denied attempt never reaches the password check or the SMS
-- gateway, so it is charged to no policy. A denying policy with block_ms
-- sets its block key.
-- Mode "record" (a reported login failure): each policy records the event
-- unless it is already full or blocked; none depends on another.
--
-- KEYS: per policy in order, its state key and then, only if its block_ms
--   is above 0, its block key
-- ARGV[1] nonce, unique per request    ARGV[2] n policies    ARGV[3] mode
-- ARGV[4 + 7(i-1) ...]: algorithm, limit, window_ms, block_ms, charge,
--   shadow, member
--   algorithm: 0 sliding_log, 1 fixed_window, 2 sliding_window,
--              3 token_bucket, 4 distinct (the enum ag_algorithm order)
--   charge:    1 to record the request when it is allowed
--   shadow:    1 if the policy may never deny (it reports only)
--   member:    distinct only: the keyed hash of the subject
-- Returns 4n integers, per policy: allowed (1/0), remaining, retry_after_ms,
-- reset_after_ms.

-- A log member is the nonce alone: the score already holds the time, and
-- the nonce (instance id, then a sequence number) is unique on its own.
local log_member = ARGV[1]
local n = tonumber(ARGV[2])
local record = ARGV[3] == 'record'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
-- TIME's microseconds, zero-padded to six digits, after its seconds.
now_text = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]

local policies = {}
local denied = false
local k = 1 -- the next policy's first key
for i = 1, n do
  local a = 4 + 7 * (i - 1)
  local block = ARGV[a + 3]
  local block_ms = block == '0' and 0 or tonumber(block)
  -- Every field the algorithms set is named here, so the table is sized
  -- once.
  local p = {
    key = KEYS[k],
    block_key = block_ms > 0 and KEYS[k + 1] or nil,
    algorithm = algorithms[ARGV[a]],
    limit = tonumber(ARGV[a + 1]),
    window_ms = ARGV[a + 2],
    window_us = tonumber(ARGV[a + 2]) * 1000,
    block_ms = block_ms,
    charge = ARGV[a + 4] == '1',
    shadow = ARGV[a + 5] == '1',
    member = ARGV[a + 6],
    blocked_ms = 0,
    count = 0, allowed = false, remaining = 0, retry_ms = 0, reset_ms = nil,
  }
  k = k + (block_ms > 0 and 2 or 1)
  if p.member == '' then
    p.member = log_member
  end
  if p.block_ms > 0 then
    p.blocked_ms = redis.call('PTTL', p.block_key)
  end
  p.algorithm.peek(p, now)
  if p.blocked_ms > 0 then
    p.allowed = false
    p.remaining = 0
    p.retry_ms = math.max(p.retry_ms, p.blocked_ms)
  end
  if not p.allowed and not p.shadow then
    denied = true
  end
  policies[i] = p
end

local out = {}
for i = 1, n do
  local p = policies[i]
  if (record or not denied) and p.charge and p.allowed then
    p.algorithm.charge(p, now)
  elseif not record and not p.allowed and not p.shadow and p.block_ms > 0
      and p.blocked_ms <= 0 then
    redis.call('SET', p.block_key, '1', 'PX', p.block_ms)
    p.retry_ms = math.max(p.retry_ms, p.block_ms)
  end
  if p.reset_ms == nil then
    p.reset_ms = p.algorithm.reset(p, now)
  end
  out[4 * i - 3] = p.allowed and 1 or 0

  out[4 * i - 2] = p.remaining
  out[4 * i - 1] = p.retry_ms
  out[4 * i] = p.reset_ms
end
return out
