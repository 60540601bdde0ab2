-- SPDX-License-Identifier: Apache-2.0
-- surge: a site-wide shield's state, shared by every instance: one call
-- of service/engine/ag_surge.c per run, with the same arithmetic, on
-- KEYS[1], a hash of window_ms and struct ag_surge_state's fields under
-- their C names (decimal integers): counts, times and baselines, nothing
-- that names anyone. A hash that is not a whole one of this window_ms
-- starts over; it expires 2 x baseline_ms after its last call.
-- KEYS[2], the shield's registry: a hash of each configuration (shape)
-- of the shield and the last time one called with it, so that instances
-- that disagree (a rollout in progress) each keep their own state, under
-- their own KEYS[1], and learn that another one is in use.
-- ARGV: now_ms ('': Redis TIME), op ('step', 'raise', 'lower'),
-- window_ms, baseline_ms, block_ms, limit, factor_milli, failures (1: the
-- shield counts failures), count, attempts, passes, for_ms (a raise's or a
-- lower's time; a step's resume's: 0 for none), known and raised_at_ms
-- (a step's resume: the switch version the caller knew, when it
-- raised), each at most 15 digits (exact in a double); then the shape
-- (this call's configuration) and recent_ms (how long ago another
-- shape's call still counts as in use).
-- Returns the state's fields in struct order, then changed, now_ms, the
-- threshold, how many other shapes were in use and the latest one's name
-- (or '').
-- A script of its own (ag_redis_surge.c), not a piece of the check library.
local key, registry = KEYS[1], KEYS[2]
local now_arg, op = ARGV[1], ARGV[2]
local floor, max, min, sqrt = math.floor, math.max, math.min, math.sqrt

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
local limit, factor_milli, failures = arg(6), arg(7), arg(8) == 1
local add_count, add_attempts, add_passes = arg(9), arg(10), arg(11)
local for_ms, known, raised_at = arg(12), arg(13), arg(14)
local shape, recent_ms = ARGV[15] or '', arg(16)
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

-- ag_surge.c's learn, young_div and periods.
local periods = floor(baseline_ms / window_ms)
local learn = max(1, floor(min(baseline_ms, 86400000) / window_ms))
local yd = max(1, floor(learn / 24))
local CLEAN, BY_COUNTS, BY_HAND = 0, 1, 2

-- The hash's fields after window_ms, in the order of the reply.
local FIELDS = {'window', 'count', 'attempts', 'passes', 'prev_count',
                'prev_attempts', 'baseline_milli', 'attempt_baseline_milli',
                'taught', 'attempts_taught', 'raised', 'whole', 'tainted',
                'by_operator', 'long_said', 'since_ms', 'until_ms',
                'switch_version', 'switch_ms', 'quiet_until_ms', 'last_ms'}
-- The flags' positions, each 0 or 1 (tainted 0 to 2).
local FLAGS = {[11] = 1, [12] = 1, [13] = 2, [14] = 1, [15] = 1}

-- ag_surge_init: lowered, nothing learned, windows from now.
local s = {floor(now / window_ms), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
           0, 0, 0, 0, 0, 0, now}

-- The hash as it is, if it is a whole one of this window_ms; else it is
-- deleted (another algorithm's fields, a key of another type, damage)
-- and the state starts over.
local h = redis.pcall('HMGET', key, 'window_ms', unpack(FIELDS))
local whole_hash = type(h) == 'table' and not h.err and
  tonumber(h[1]) == window_ms
local v = {}
for i = 1, #FIELDS do
  if whole_hash then
    v[i] = tonumber(h[i + 1])
    whole_hash = v[i] ~= nil and (not FLAGS[i] or v[i] <= FLAGS[i])
  end
end
if whole_hash then
  s = v
else
  redis.call('DEL', key)
end
local window, count, attempts, passes = s[1], s[2], s[3], s[4]
local prev_count, prev_attempts = s[5], s[6]
local base, attempt_base, taught, attempts_taught = s[7], s[8], s[9], s[10]
local raised, whole, tainted = s[11] == 1, s[12] == 1, s[13]
local by_operator, long_said = s[14] == 1, s[15] == 1
local since_ms, until_ms, switch_version, switch_ms = s[16], s[17], s[18],
  s[19]
local quiet_until, last_ms = s[20], s[21]

local function minus(a, b)
  return a > b and a - b or 0
end

local function threshold()
  -- max(limit, floor(base x factor_milli / 10^6)), split so that no
  -- product nears 2^53 (r x factor_milli stays under 10^11 for a
  -- policy's factor, at most 100).
  local q = floor(base / 1000000)
  local r = base - q * 1000000
  return max(limit, q * factor_milli + floor(r * factor_milli / 1000000))
end

-- ag_surge.c's teach: the n-th window taught, x, into the average b.
local function teach(b, x, n, first)
  local young = n <= learn
  local div = min(n, young and yd or periods)
  local cap = first
  if n > 1 then
    local room = b
    if young then
      room = floor(b / yd) * div + floor((b % yd) * div / yd)
    end
    cap = max(limit * 1000, b + room)
  end
  local xm = x * 1000
  if cap and xm > cap then
    xm = cap
  end
  if xm >= b then
    return b + floor((xm - b) / div)
  end
  return b - floor((b - xm + div - 1) / div)
end

-- ag_surge.c's renews, in doubles, operation for operation.
local function renews(a)
  local b = attempt_base / 1000
  local excess = a - b
  local bar = (factor_milli - 1000) / 1000 * b
  local noise = 3 * sqrt(b) + 1
  return excess > bar and excess > noise
end

-- ag_surge.c's roll: to the later window wi.
local function roll(wi)
  local gap = wi - window
  if raised and not by_operator and gap == 1 and attempts_taught > 0 and
      renews(minus(attempts, passes)) then
    until_ms = max(until_ms, now + block_ms)
  end
  local young = taught < learn
  local signal = tainted == CLEAN or
    (tainted == BY_COUNTS and (failures or young))
  if whole and signal then
    taught = taught + 1
    base = teach(base, count, taught, limit * 1000)
  end
  if whole and tainted == CLEAN then
    attempts_taught = attempts_taught + 1
    attempt_base = teach(attempt_base, attempts, attempts_taught, nil)
  end
  prev_count = gap == 1 and count or 0
  prev_attempts = gap == 1 and attempts or 0
  if gap - 1 > learn then
    taught, attempts_taught = min(taught, 1), min(attempts_taught, 1)
  end
  window, count, attempts, passes = wi, 0, 0, 0
  whole = gap == 1
  tainted = not raised and CLEAN or by_operator and BY_HAND or BY_COUNTS
end

-- ag_surge.c's advance: a clock that went back, a later window.
local function advance()
  if now < last_ms then
    local back = last_ms - now
    since_ms, until_ms = minus(since_ms, back), minus(until_ms, back)
    quiet_until, switch_ms = minus(quiet_until, back), minus(switch_ms, back)
  end
  last_ms = now
  local wi = floor(now / window_ms)
  if wi > window then
    roll(wi)
  elseif wi < window then
    window, count, attempts, passes = wi, 0, 0, 0
    prev_count, prev_attempts = 0, 0
    whole = false
  end
end

local function raise_now(at, hand)
  raised, since_ms, by_operator, long_said = true, at, hand, false
  local taint = hand and BY_HAND or BY_COUNTS
  if tainted < taint then
    tainted = taint
  end
end

local RAISED, LOWERED, LONG, RESUMED = 1, 2, 4, 8
local changed = 0
advance()
if op == 'step' then
  count = count + add_count
  attempts = attempts + add_attempts
  passes = passes + add_passes
  local t = threshold()
  if raised and count > t then
    until_ms = max(until_ms, now + block_ms)
  end
  -- ag_surge.c's resumes: an instance's own raise, taken back.
  if for_ms > 0 and switch_version == known and switch_ms < raised_at and
      now >= quiet_until then
    if not raised then
      raise_now(now, false)
      until_ms = now
      changed = RAISED + RESUMED
    end
    until_ms = max(until_ms, now + for_ms)
  end
  if raised and now >= until_ms then
    raised, by_operator = false, false
    changed = LOWERED
  end
  if not raised and count > t and now >= quiet_until then
    raise_now(now, false)
    until_ms = now + block_ms
    changed = RAISED
  end
  if raised and not by_operator and not long_said and
      minus(now, since_ms) >= 6 * block_ms then
    long_said = true
    changed = changed + LONG
  end
elseif op == 'raise' then
  switch_version, switch_ms, quiet_until = switch_version + 1, now, 0
  if not raised then
    changed = RAISED
    raise_now(now, true)
  else
    raise_now(since_ms, true)
  end
  until_ms = now + for_ms
else -- lower
  switch_version, switch_ms, quiet_until = switch_version + 1, now,
    now + for_ms
  if raised then
    raised, by_operator, until_ms = false, false, 0
    changed = LOWERED
  end
end

local function bit(b)
  return b and 1 or 0
end
local out = {window, count, attempts, passes, prev_count, prev_attempts,
             base, attempt_base, taught, attempts_taught, bit(raised),
             bit(whole), tainted, bit(by_operator), bit(long_said), since_ms,
             until_ms, switch_version, switch_ms, quiet_until, last_ms}
local set = {'window_ms', int(window_ms)}
for i = 1, #FIELDS do
  set[#set + 1] = FIELDS[i]
  set[#set + 1] = int(out[i])
end
redis.call('HSET', key, unpack(set))
redis.call('PEXPIRE', key, int(2 * baseline_ms))

-- The registry: this shape's call now; the others still in use, and the
-- latest of them; those unheard of for two baseline periods go.
local others, latest, latest_ms = 0, '', -1
redis.call('HSET', registry, shape, int(now))
local all = redis.call('HGETALL', registry)
for i = 1, #all, 2 do
  local name, at = all[i], tonumber(all[i + 1]) or 0
  -- How far from now, either way: a clock that stepped back leaves
  -- times ahead of it, which are no sign of use.
  local apart = now >= at and now - at or at - now
  if name ~= shape then
    if apart <= recent_ms then
      others = others + 1
      if at > latest_ms then
        latest, latest_ms = name, at
      end
    elseif apart > 2 * baseline_ms then
      redis.call('HDEL', registry, name)
    end
  end
end
-- A shape's name is at most 95 bytes (ag_redis_surge.h); another
-- version's longer one is cut, not a reply the caller refuses.
latest = string.sub(latest, 1, 95)
redis.call('PEXPIRE', registry, int(2 * baseline_ms))

out[#out + 1] = changed
out[#out + 1] = now
out[#out + 1] = threshold()
out[#out + 1] = others
out[#out + 1] = latest
return out
