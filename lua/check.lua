-- check: evaluates every policy of one check atomically and records the
-- attempt only if no enforcing policy denies it ("all or nothing"): a
-- denied attempt never reaches the password check or the SMS gateway, so it
-- is charged to no policy. The composed script is every other file of lua/
-- (one algorithm each) followed by this one.
--
-- KEYS[2i-1]  policy i's state key        KEYS[2i]  policy i's block key
-- ARGV[1]     nonce, unique per check      ARGV[2]   n, number of policies
-- ARGV[3 + 6(i-1) ...]  algorithm, limit, window_ms, block_ms, charge, shadow
--   algorithm: 0 sliding_log (the enum ag_algorithm order)
--   charge:    1 to record the attempt when the check is allowed
--   shadow:    1 if the policy may never deny (it reports only)
-- Returns 4n integers, per policy: allowed (1/0), remaining, retry_after_ms,
-- reset_after_ms.
local algorithms = { [0] = sliding_log }

local nonce = ARGV[1]
local n = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local policies = {}
local denied = false
for i = 1, n do
  local a = 3 + 6 * (i - 1)
  local p = {
    key = KEYS[2 * i - 1],
    block_key = KEYS[2 * i],
    algorithm = algorithms[tonumber(ARGV[a])],
    limit = tonumber(ARGV[a + 1]),
    window_us = tonumber(ARGV[a + 2]) * 1000,
    block_ms = tonumber(ARGV[a + 3]),
    charge = ARGV[a + 4] == '1',
    shadow = ARGV[a + 5] == '1',
    blocked_ms = 0,
  }
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
  if not denied then
    if p.charge and p.allowed then
      p.algorithm.charge(p, now, t[1] .. '.' .. t[2] .. ':' .. nonce)
    end
  elseif not p.allowed and not p.shadow and p.block_ms > 0
      and p.blocked_ms <= 0 then
    redis.call('SET', p.block_key, '1', 'PX', p.block_ms)
    p.retry_ms = math.max(p.retry_ms, p.block_ms)
  end
  out[4 * i - 3] = p.allowed and 1 or 0
  out[4 * i - 2] = p.remaining
  out[4 * i - 1] = p.retry_ms
  out[4 * i] = p.reset_ms
end
return out
