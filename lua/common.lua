-- common: helpers every algorithm shares. The composed script is this file,
-- then every algorithm file, then check.lua.

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
