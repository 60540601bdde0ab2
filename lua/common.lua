-- SPDX-License-Identifier: Apache-2.0
-- common: helpers every algorithm shares. It comes first in the library
-- or script the service composes, before the algorithm files and the
-- drivers (check.lua; release.lua, in the library only), which see its
-- locals.
--
-- The algorithm interface. Every algorithm is a table registered in
-- `algorithms` under its ARGV code, with four functions that take plain
-- values and return plain values: a per-policy Lua table costs Redis more
-- than the commands it drives (measured with callgrind in redis-server:
-- about a quarter of a login check's instructions), so nothing here
-- allocates one.
--
--   peek(key, limit, window_us, member, now, ratio)
--     -> allowed, remaining, retry_ms, reset_ms, s1, s2, s3, s4
--     decides without recording. ratio is the spec's min_ratio (false
--     but for an algorithm with needs_ratio, conversion). reset_ms is
--     false when it costs a Redis call to know and the driver may not need
--     it; s1..s4 are whatever the algorithm wants handed to charge.
--   charge(key, limit, window_us, window_ms, member, now, s1, s2, s3, s4)
--     -> remaining, reset_ms, undo
--     records one request that peek allowed. window_ms is the ARGV text.
--     undo is a non-negative integer that lets release undo exactly this
--     charge (0: nothing to undo); only mode "reserve" reports it.
--   release(key, limit, window_us, member, nonce, undo, now) -> undid
--     undoes the charge of a reserve (release.lua) that reported undo,
--     not 0, with the reserve's member and nonce; true if it changed
--     anything. State that has since expired or moved on is left alone.
--   reset(key, window_us, now) -> reset_ms
--     for a policy peek left reset_ms false and that was not charged.
--
-- key is the policy's state key; limit and window_us are numbers; member is
-- what set-based algorithms record (the request's nonce, or for distinct
-- the subject's keyed hash); now is microseconds from clock().
--
-- Two optional flags of an algorithm's table: needs_ratio (its specs carry
-- " r<ppm>", and only its do) and records_blocked (in mode "record" a
-- block does not stop it recording). An algorithm that treats a reported
-- event unlike a check (conversion) reads `recording`, below.

-- The algorithms in this script, by their spec code as text (no tonumber
-- per policy). The service registers each algorithm file's table after it,
-- under its enum ag_algorithm value (service/redis/ag_redis_code.c).
local algorithms = {}

-- redis.call, redis.pcall, type and math.ceil, each used several times a
-- check: a global is looked up in Redis's sandbox tables at every use, a
-- local is not. The driver sets them at the start of each check (a
-- library loads with none of them in reach).
local rcall, rpcall, type_of, ceil

-- Microseconds to whole milliseconds, rounded up: a wait is never reported
-- shorter than it is.
local function ms(us)
  return ceil(us / 1000)
end

-- Integer text for a Redis argument: Lua's tostring would print large
-- numbers in exponent form. Every caller's number is a whole one (times in
-- microseconds, counts, window indices), which '%d' prints exactly where
-- Lua 5.1's C long has 64 bits, at a fifth of the cost of '%.0f', whose
-- printing of a double runs glibc's floating-point conversion: about
-- 4 000 instructions in Redis each (bench/script_cost.sh, issue 41). A
-- Redis built for 32 bits (i386, armhf) would print our times as its
-- long's limit: there, tried at the first call (a library loads with
-- no string library in reach), '%.0f' it is.
local int_format = false
local function int(x)
  if not int_format then
    int_format = string.format('%d', 2 ^ 53) == '9007199254740992' and '%d'
      or '%.0f'
  end
  return string.format(int_format, x)
end

-- The clock: the check's time, microseconds since the Unix epoch, as
-- integer text. Every time an algorithm uses comes from it, once per
-- check, so that a test build of the library can replace it and run the
-- algorithms at the times a test chooses (the clock.lua piece of
-- tests/integration/test_store_redis.c); production reads Redis TIME.
local function clock()
  local t = rcall('TIME')
  -- TIME's microseconds, zero-padded to six digits, after its seconds.
  return t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
end

-- Arguments to redis.call go as text the driver already has: Redis
-- formats a Lua number argument with printf("%.17g"), which costs about
-- as much as the command it feeds. now_text is the check's time in
-- microseconds as integer text, set once by the driver.
local now_text

-- Whether this run records reported events (check.lua's mode "record")
-- rather than checks: set once by the driver, like now_text, for the
-- algorithms that count the two apart.
local recording = false

-- Whether this run only looks (check.lua's mode "peek", the admin
-- inspect): set once by the driver. A peek writes nothing at all, not
-- even the housekeeping a check does on its way (expired set members
-- removed, a set over a lowered limit trimmed, a key of another type
-- deleted), so that it leaves Redis byte for byte as it found it; it
-- reads around that state instead, to the same answers.
local peeking = false

-- A policy's spec, its ARGV text "algorithm limit window_ms block_ms charge
-- shadow[ growth block_max_ms][ r<ppm>]" (the check.lua layout), as an
-- array: the algorithm's table, limit, window in microseconds, window_ms
-- and block_ms as text, charge and shadow as booleans, then growth and
-- block_max_ms as numbers (block_max_ms never below block_ms: a cap under
-- the first block would shorten it; 1 and 0 without blocks), then the
-- ratio, ppm / 1e6 (false without one; a spec has one exactly when its
-- algorithm needs_ratio). The function library, which Redis loads
-- once, remembers specs: a check then reads its policies without a
-- tonumber (glibc's strtod, about a thousand instructions) or a pattern
-- match, and the texts come from the policies, a small set (should it
-- ever pass 4096 texts the memo starts again). A script starts afresh on
-- every run and parses. `library` says which this is:
-- redis.register_function exists only while a library loads.
local library = redis.register_function ~= nil
-- The driver looks a spec up in specs and calls spec_of only on a miss.
local specs, nspecs = {}, 0
local function spec_of(text)
  local a, limit, window_ms, block_ms, charge, shadow, rest =
    string.match(text, '^(%d) (%d+) (%d+) (%d+) ([01]) ([01])(.*)$')
  -- Only a policy with blocks has (and needs) the growth: a login check
  -- of policies without sends what it sent before there was one, and a
  -- script, which parses every spec of every check, parses no more.
  -- The ratio, last, only in the specs of an algorithm that needs one:
  -- every other spec is as it was before there was one.
  local growth, max_ms, ppm
  if rest then
    local before, r = string.match(rest, '^(.-) r(%d+)$')
    if r then
      rest, ppm = before, tonumber(r)
    end
  end
  if rest and rest ~= '' then
    growth, max_ms = string.match(rest, '^ (%d+) (%d+)$')
  end
  if not a or not algorithms[a] or (block_ms == '0') ~= (rest == '') or
      (rest ~= '' and not growth) or
      (ppm ~= nil) ~= (algorithms[a].needs_ratio == true) or
      (ppm and (ppm < 1 or ppm > 1000000)) then
    error('bad policy spec: ' .. text)
  end
  local p = {algorithms[a], tonumber(limit), tonumber(window_ms) * 1000,
             window_ms, block_ms, charge == '1', shadow == '1', 1, 0,
             ppm and ppm / 1000000 or false}
  if growth then
    p[8] = tonumber(growth)
    p[9] = math.max(tonumber(max_ms), tonumber(block_ms))
  end
  if library then
    if nspecs >= 4096 then
      specs, nspecs = {}, 0
    end
    specs[text], nspecs = p, nspecs + 1
  end
  return p
end

-- The reply r of redis.pcall on key, a reading command. A key of another
-- type, left by an earlier algorithm of a policy an admin has since
-- changed, is deleted and reads as absent (nil), so an edit never wedges a
-- policy on WRONGTYPE. The caller makes the call: no varargs to pass on.
local function read(key, r)
  if type_of(r) == 'table' and r.err then
    if string.find(r.err, 'WRONGTYPE', 1, true) then
      if not peeking then
        rcall('DEL', key)
      end
      return nil
    end
    error(r.err)
  end
  return r
end

-- The sorted-set algorithms (sliding_log, distinct) share their bookkeeping.

-- The rank of the oldest member set_count counted: 0 once it has removed
-- what no longer counts, and in a peek, which removes nothing, the number
-- of members it would have removed (expired ones rank first, being the
-- oldest, then the oldest beyond the limit).
local set_skip = 0

-- The number of key's live members. Expired ones are removed (only from a
-- non-empty set: most keys a check touches are new), and when an admin
-- lowered the limit the oldest beyond it are trimmed, which keeps the same
-- answers (only the newest `limit` can decide one). A peek counts the
-- same members without removing any (set_skip).
local function set_count(key, limit, window_us, now)
  set_skip = 0
  local count = rpcall('ZCARD', key)
  if count == 0 then -- the common case: a new key (an error is a table)
    return 0
  end
  count = read(key, count) or 0
  if count > 0 and peeking then
    local live = rcall('ZCOUNT', key, '(' .. int(now - window_us), '+inf')
    set_skip = count - live
    count = live
  elseif count > 0 then
    count = count - rcall('ZREMRANGEBYSCORE', key, '-inf',
                               int(now - window_us))
  end
  if count > limit then
    if peeking then
      set_skip = set_skip + count - limit
    else
      rcall('ZREMRANGEBYRANK', key, 0, count - limit - 1)
    end
    count = limit
  end
  return count
end

-- peek's answer for a set of count live members: allowed, or denied until
-- its oldest member leaves the window. reset_ms is 0 for an empty set and
-- otherwise left to set_reset, which the driver calls only for a policy it
-- did not charge (a charge makes it the whole window): one Redis call saved
-- per check.
local function set_answer(key, limit, window_us, now, count, allowed)
  local reset_ms = count == 0 and 0
  if allowed then
    return true, limit - count, 0, reset_ms
  end
  local oldest = rcall('ZRANGE', key, set_skip, set_skip, 'WITHSCORES')
  return false, 0, ms(tonumber(oldest[2]) + window_us - now), reset_ms
end

-- Milliseconds until the newest member of key leaves the window, when the
-- whole set will have expired.
local function set_reset(key, window_us, now)
  local newest = rcall('ZRANGE', key, -1, -1, 'WITHSCORES')
  return ms(tonumber(newest[2]) + window_us - now)
end

-- Sets key to expire at `at` microseconds of the clock, rounded up to
-- Redis's milliseconds. An expiry only frees a key whose state no longer
-- matters: no answer depends on when Redis drops it, and it is set from the
-- clock, not relative to Redis's own (SET PX), so that the test clock
-- governs it too (but see set_add).
local function expire_at(key, at)
  rcall('PEXPIREAT', key, int(ceil(at / 1000)))
end

-- Adds (or refreshes) member at now; the set lives one window past it.
-- The one expiry relative to Redis's own clock (PEXPIRE, with the window's
-- ARGV text): an absolute one costs the string.format of its time, a tenth
-- of a login check's instructions for its three sets (bench/script_cost.sh).
-- It is safe all the same: Redis's clock is the one TIME reads, it keeps
-- the key at least window_ms after the check began, and no answer depends
-- on the key's expiry (set_count drops expired members itself); under the
-- test clock, far ahead of Redis's, it expires no sooner than a window
-- after the last add, by which time the test clock has moved further.
local function set_add(key, window_ms, member)
  rcall('ZADD', key, now_text, member)
  rcall('PEXPIRE', key, window_ms)
end

-- A block key holds the time its block ends, microseconds of the clock;
-- the block holds while now is before it. Redis's PTTL would judge it in
-- whole milliseconds of Redis's own clock, letting a request through up
-- to a millisecond early. A key from before (value '1') is judged by its
-- PTTL still. Returns the block's milliseconds left, 0 if none.
local function blocked_ms_of(key, now)
  local v = rcall('GET', key)
  if not v then
    return 0
  elseif v == '1' then
    return math.max(rcall('PTTL', key), 0)
  end
  local left = tonumber(v) - now
  return left > 0 and ms(left) or 0
end

-- How long after its block ends a key's block level is remembered, in
-- microseconds: AG_BLOCK_LEVEL_S, which ag_redis_code.c writes in right
-- after this file so that the number has one home, the C header.
local block_level_us

-- A block level key holds "<n> <end_us>": n blocks in a row so far, the
-- last ending at end_us. A block that starts before end_us plus
-- block_level_us is the next of the row; a later one starts the row
-- again. Returns n while the row goes on at now, else 0. Judged by the
-- time kept in the key, not by the key's expiry, which only frees it.
local function block_level_of(level_key, now)
  local count, last = string.match(rcall('GET', level_key) or '',
                                   '^(%d+) (%d+)$')
  if count and now < tonumber(last) + block_level_us then
    return tonumber(count)
  end
  return 0
end

-- Blocks policy p's key from now, setting block_key, and returns the
-- block's milliseconds. Where its blocks grow (p[8] above 1, level_key
-- given), the block is the next of its row (block_level_of) and lasts
-- block_ms * growth^n, at most block_max_ms, and the level key counts it.
local function block_for(block_key, level_key, p, now)
  local d = tonumber(p[5])
  local n = 0
  if level_key then
    n = block_level_of(level_key, now)
    -- A loop, not growth^n: n is small, and the sum stays an exact
    -- integer that the C store reproduces digit for digit.
    local max_ms = p[9]
    for _ = 1, n do
      if d >= max_ms then
        break
      end
      d = d * p[8]
    end
    d = math.min(d, max_ms)
  end
  local until_us = now + d * 1000
  rcall('SET', block_key, int(until_us))
  expire_at(block_key, until_us)
  if level_key then
    rcall('SET', level_key, int(n + 1) .. ' ' .. int(until_us))
    expire_at(level_key, until_us + block_level_us)
  end
  return d
end

-- The same wrong password counted once. key is the user's sorted set of
-- the keyed digests of the fingerprints they last reported, scored by
-- when, of which the newest three within window_us are remembered. Returns
-- whether fp is one of them, and records it as the newest either way (a
-- stale password retried all night stays forgiven while it is retried
-- within each window).
local function fingerprint_seen(key, fp, window_us, window_ms, now)
  rcall('ZREMRANGEBYSCORE', key, '-inf', int(now - window_us))
  local seen = rcall('ZSCORE', key, fp) ~= false
  rcall('ZADD', key, now_text, fp)
  if not seen then
    rcall('ZREMRANGEBYRANK', key, 0, -4)
  end
  rcall('PEXPIRE', key, window_ms)
  return seen
end
