-- SPDX-License-Identifier: Apache-2.0
-- surge: a site-wide shield's state, shared by every instance: one step of
-- service/engine/ag_surge.c per run, with the same integer arithmetic, on
-- KEYS[1], a hash of window_ms and struct ag_surge_state's fields under
-- their C names (decimal integers; raised and tainted 0 or 1): counts,
-- times and baselines, nothing that names anyone. A hash of another
-- window_ms, or anything else, starts over; it expires 2 x baseline_ms
-- after its last run. ARGV: now_ms ('': Redis TIME), op ('step', 'raise',
-- 'lower'), window_ms, baseline_ms, block_ms, limit, factor_milli, count,
-- attempts, for_ms, each at most 15 digits (exact in a double). Returns
-- the state's fields in struct order, changed, now_ms and the threshold.
-- A script of its own (ag_redis_surge.c), not a piece of the check library.
local key = KEYS[1]
local now_arg, op = ARGV[1], ARGV[2]
local floor, max, min = math.floor, math.max, math.min

local function arg(i)
  local s = ARGV[i] or ''
  if not string.match(s, '^%d+$') or #s > 15 then
    error('bad surge argument ' .. i .. ': ' .. s)
  end
  return tonumber(s)
end

-- Integer text for Redis: tostring would print large numbers in exponent
-- form.
local function int(x)
  return string.format('%.0f', x)
end

local window_ms, baseline_ms, block_ms = arg(3), arg(4), arg(5)
local limit, factor_milli = arg(6), arg(7)
local add_count, add_attempts, for_ms = arg(8), arg(9), arg(10)
if window_ms < 1 or baseline_ms < window_ms then
  error('bad surge window_ms or baseline_ms')
end
if op ~= 'step' and op ~= 'raise' and op ~= 'lower' then
  error('bad surge op: ' .. tostring(op))
end

-- Redis 7 replicates a script's effects, not the script: reading the
-- clock before writing is safe (and common.lua's clock does the same).
local now
if now_arg == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
else
  now = arg(1)
end

-- The hash's fields after window_ms, in the order of the reply.
local FIELDS = {'window', 'count', 'attempts', 'prev_count', 'prev_attempts',
                'baseline_milli', 'attempt_baseline_milli', 'taught',
                'raised', 'tainted', 'since_ms', 'until_ms',
                'peak_attempts'}

-- ag_surge_init: lowered, nothing learned, windows from now.
local window, count, attempts = floor(now / window_ms), 0, 0
local prev_count, prev_attempts, base, attempt_base, taught = 0, 0, 0, 0, 0
local raised, tainted, since_ms, until_ms, peak = false, false, 0, 0, 0

-- The hash as it is, if it is a whole one of this window_ms; else it is
-- deleted (another window_ms's, another algorithm's, a key of another
-- type) and the state starts over.
local h = redis.pcall('HMGET', key, 'window_ms', unpack(FIELDS))
local v = {}
local whole = type(h) == 'table' and not h.err and
  tonumber(h[1]) == window_ms
for i = 1, #FIELDS do
  if whole then
    v[i] = tonumber(h[i + 1])
    whole = v[i] ~= nil
  end
end
if whole and (v[9] > 1 or v[10] > 1) then
  whole = false
end
if whole then
  window, count, attempts, prev_count, prev_attempts = v[1], v[2], v[3],
    v[4], v[5]
  base, attempt_base, taught = v[6], v[7], v[8]
  raised, tainted = v[9] == 1, v[10] == 1
  since_ms, until_ms, peak = v[11], v[12], v[13]
else
  redis.call('DEL', key)
end

-- Full windows of the average, at most: ag_surge.c's EMPTY_TEACH_MAX and
-- the divisor once as many have been taught.
local periods = floor(baseline_ms / window_ms)

-- ag_surge.c's teach: x clipped (but for the first), then the average b
-- moves (x - b) / min(n, periods), floored toward minus infinity. Exact
-- while a window counts under 9 x 10^12 (x x 1000 below 2^53).
local function teach(b, x, n)
  local div = min(n, periods)
  local xm = x * 1000
  if n > 1 then
    xm = min(xm, max(limit * 1000, 2 * b))
  end
  if xm >= b then
    return b + floor((xm - b) / div)
  end
  return b - floor((b - xm + div - 1) / div)
end

-- k zeros taught in a row into an average b of periods windows, as k
-- teach(b, 0, n) with n >= periods: each takes ceil(b / periods) off, the
-- same while b stays in one band ((c - 1) x periods, c x periods], so a
-- band goes in one round. Exactly ag_surge.c's k steps, in min(k, b /
-- periods + 1) rounds: a baseline of 30 days in windows of a second
-- would otherwise loop millions of times in Redis after a long gap.
local function decay(b, k)
  while k > 0 and b > 0 do
    local c = floor((b + periods - 1) / periods)
    local s = min(k, floor((b - (c - 1) * periods + c - 1) / c))
    b, k = b - s * c, k - s
  end
  return b
end

-- ag_surge.c's holds, in doubles, operation for operation.
local function holds(a)
  local b = attempt_base / 1000
  local excess = a - b
  local peak_excess = peak - b
  local noise = 3 * math.sqrt(b) + 1
  return excess >= peak_excess / 2 and excess >= noise
end

-- ag_surge.c's roll: to window wi, the full window teaching the baselines.
local function roll(wi)
  local gap = wi - window
  if not tainted then
    taught = taught + 1
    base = teach(base, count, taught)
    attempt_base = teach(attempt_base, attempts, taught)
  end
  local empty = min(gap - 1, periods)
  if raised then
    empty = 0
  end
  -- Empty windows teach zeros, one by one while fewer than periods have
  -- been taught (each has its own divisor; none moves a zero average),
  -- then by decay.
  while empty > 0 and taught + 1 < periods and
      (base > 0 or attempt_base > 0) do
    taught, empty = taught + 1, empty - 1
    base = teach(base, 0, taught)
    attempt_base = teach(attempt_base, 0, taught)
  end
  base, attempt_base = decay(base, empty), decay(attempt_base, empty)
  taught = taught + empty
  prev_count = gap == 1 and count or 0
  prev_attempts = gap == 1 and attempts or 0
  if raised then
    peak = max(peak, prev_attempts)
    if holds(prev_attempts) then
      until_ms = max(until_ms, now + block_ms)
    end
  end
  window, count, attempts = wi, 0, 0
  tainted = raised
end

-- ag_surge_threshold: max(limit, floor(base x factor_milli / 10^6)),
-- split so that no product nears 2^53 (r x factor_milli stays under 10^11
-- for a policy's factor, at most 100).
local function threshold()
  local q = floor(base / 1000000)
  local r = base - q * 1000000
  return max(limit, q * factor_milli + floor(r * factor_milli / 1000000))
end

local RAISED, LOWERED = 1, 2
local changed = 0
local wi = floor(now / window_ms)
if op == 'step' then
  if wi > window then
    roll(wi)
  end
  count = count + add_count
  attempts = attempts + add_attempts
  local t = threshold()
  if raised and count > t then
    until_ms = max(until_ms, now + block_ms)
  end
  if raised and now >= until_ms then
    raised = false
    changed = LOWERED
  end
  if not raised and count > t then
    raised, tainted = true, true
    since_ms, until_ms = now, now + block_ms
    peak = max(attempts, prev_attempts)
    changed = RAISED
  end
elseif op == 'raise' then
  if wi > window then
    roll(wi)
  end
  if not raised then
    raised, since_ms = true, now
    peak = floor(attempt_base / 1000)
    changed = RAISED
  end
  tainted = true
  until_ms = now + for_ms
elseif raised then -- lower
  raised, until_ms = false, 0
  changed = LOWERED
end

local out = {window, count, attempts, prev_count, prev_attempts, base,
             attempt_base, taught, raised and 1 or 0, tainted and 1 or 0,
             since_ms, until_ms, peak}
local set = {'window_ms', int(window_ms)}
for i = 1, #FIELDS do
  set[#set + 1] = FIELDS[i]
  set[#set + 1] = int(out[i])
end
redis.call('HSET', key, unpack(set))
redis.call('PEXPIRE', key, int(2 * baseline_ms))
out[#out + 1] = changed
out[#out + 1] = now
out[#out + 1] = threshold()
return out
