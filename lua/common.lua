-- common: helpers every algorithm shares. A composed script is this file,
-- then the algorithm files a check's policies use, then check.lua.

-- The algorithms in this script, by their ARGV code (the enum ag_algorithm
-- order, as text: no tonumber per policy). Each algorithm file registers
-- itself at its end.
local algorithms = {}

-- Microseconds to whole milliseconds, rounded up: a wait is never reported
-- shorter than it is.
local function ms(us)
  return math.ceil(us / 1000)
end

-- Integer text for a Redis argument: Lua's tostring would print large
-- numbers in exponent form.
local function int(x)
  return string.format('%.0f', x)
end

-- Arguments to redis.call go as text the driver already has: Redis
-- formats a Lua number argument with printf("%.17g"), which costs about
-- as much as the command it feeds. now_text is the check's time in
-- microseconds as integer text, set once by the driver; p.window_ms is the
-- window's ARGV text.
local now_text

-- Runs a reading command on key. A key of another type, left by an earlier
-- algorithm of a policy an admin has since changed, is deleted and reads as
-- absent (nil), so an edit never wedges a policy on WRONGTYPE.
local function read(cmd, key, ...)
  local r = redis.pcall(cmd, key, ...)
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'WRONGTYPE', 1, true) then
      redis.call('DEL', key)
      return nil
    end
    error(r.err)
  end
  return r
end

-- For the sorted-set algorithms: milliseconds until the newest member of
-- p.key leaves the window, when the whole set will have expired.
local function set_reset(p, now)
  local newest = redis.call('ZRANGE', p.key, -1, -1, 'WITHSCORES')
  return ms(tonumber(newest[2]) + p.window_us - now)
end

-- The sorted-set algorithms (sliding_log, distinct) share their bookkeeping.
-- set_peek counts p.key's live members into p.count: expired ones are
-- removed (only from a non-empty set: most keys a check touches are new),
-- and when an admin lowered the limit the oldest beyond it are trimmed,
-- which keeps the same answers (only the newest `limit` can decide one).
-- reset_ms is 0 for an empty set and otherwise left for set_reset, which
-- the driver calls only for a policy it did not charge (a charge makes it
-- the whole window): one Redis call saved per check.
local function set_peek(p, now)
  local key = p.key
  local count = read('ZCARD', key) or 0
  if count > 0 then
    count = count - redis.call('ZREMRANGEBYSCORE', key, '-inf',
                               int(now - p.window_us))
  end
  if count > p.limit then
    redis.call('ZREMRANGEBYRANK', key, 0, count - p.limit - 1)
    count = p.limit
  end
  p.count = count
  if count == 0 then
    p.reset_ms = 0
  end
end

-- Allows p, or denies it until its oldest member leaves the window.
local function set_decide(p, now, allowed)
  p.allowed = allowed
  if allowed then
    p.remaining = p.limit - p.count
    p.retry_ms = 0
    return
  end
  local oldest = redis.call('ZRANGE', p.key, 0, 0, 'WITHSCORES')
  p.remaining = 0
  p.retry_ms = ms(tonumber(oldest[2]) + p.window_us - now)
end

-- Adds (or refreshes) member at now; the set lives one window past it.
local function set_add(p, now, member)
  redis.call('ZADD', p.key, now_text, member)
  redis.call('PEXPIRE', p.key, p.window_ms)
  p.reset_ms = ms(p.window_us)
end
