-- SPDX-License-Identifier: Apache-2.0
-- fleet: one fleet's history in Redis (service/redis/ag_redis_fleet.h),
-- each step atomic, so that two instances writing at once cannot both
-- take one version. Records arrive sealed (service/fleet/ag_fleet_record.h):
-- this script sees their places (epoch, version, the hash before and
-- their own) and opaque blobs, never a policy or an address.
-- KEYS[1], the head: a hash of epoch, version, hash, seed (1 while the
--   fleet's set is still a seed an instance started with) and
--   settle_until (Unix ms before which no change is taken: a restored
--   history waits for every instance to offer a later one).
-- KEYS[2], the log: a stream of records, entry id "<version>-0", fields
--   v (version), e (epoch), p (the hash before), h (its hash), s (the
--   schema it needs) and b (the blob).
-- KEYS[3], the base: a hash of one sealed snapshot (e, v, h, s, b), the
--   whole set at version v, for an instance the log no longer reaches.
-- KEYS[4], the members: a hash of instance id to "<Unix ms> <JSON>", the
--   heartbeats.
-- ARGV[1] is the op, ARGV[2] the channel a change is published on;
-- the rest are the op's (below). Time is Redis TIME.
-- A script of its own (ag_redis_fleet.c), not a piece of the check library.
local head, log, base, members = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op, channel = ARGV[1], ARGV[2]

local function num(i)
  local s = ARGV[i] or ''
  if not string.match(s, '^%d+$') or #s > 15 then
    error('bad fleet argument ' .. i .. ': ' .. s)
  end
  return tonumber(s)
end

local function int(x)
  return string.format('%.0f', x)
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function get(key, field)
  return redis.call('HGET', key, field)
end

-- The version of the log's first record, 0 if it has none.
local function first_version()
  local first = redis.call('XRANGE', log, '-', '+', 'COUNT', 1)
  if #first == 0 then
    return 0
  end
  return tonumber(string.match(first[1][1], '^(%d+)-'))
end

-- Does the head stand where the caller saw it? ARGV[i..i+3]: exists (0
-- or 1), epoch, version, hash.
local function as_seen(i)
  local exists = redis.call('EXISTS', head) == 1
  if ARGV[i] == '0' then
    return not exists
  end
  return exists and get(head, 'epoch') == ARGV[i + 1]
    and get(head, 'version') == ARGV[i + 2] and get(head, 'hash') == ARGV[i + 3]
end

local function publish(epoch, version)
  -- A user whose ACL lacks the channel still writes: the instances'
  -- poll carries the change, and the start said why (ag_fleet.c).
  redis.pcall('PUBLISH', channel, epoch .. ' ' .. version)
end

local function settle_left()
  local u = tonumber(get(head, 'settle_until') or '0') or 0
  return u > now and u - now or 0
end

if op == 'head' then
  if redis.call('EXISTS', head) == 0 then
    return {0, '', 0, '', 0, 0, 0, first_version(), now}
  end
  return {1, get(head, 'epoch'), tonumber(get(head, 'version')),
          get(head, 'hash'), tonumber(get(head, 'seed') or '0'),
          settle_left(), tonumber(get(base, 'v') or '0'), first_version(), now}
elseif op == 'append' then
  -- epoch, version, prev, hash, schema, blob, seed.
  local epoch, version, prev = ARGV[3], num(4), ARGV[5]
  if redis.call('EXISTS', head) == 0 or get(head, 'epoch') ~= epoch
      or tonumber(get(head, 'version')) ~= version - 1
      or get(head, 'hash') ~= prev then
    return {0, 'moved', 0}
  end
  local left = settle_left()
  if left > 0 then
    return {0, 'settling', left}
  end
  redis.call('XADD', log, int(version) .. '-0', 'v', int(version), 'e', epoch,
             'p', prev, 'h', ARGV[6], 's', ARGV[7], 'b', ARGV[8])
  redis.call('HSET', head, 'version', int(version), 'hash', ARGV[6], 'seed',
             ARGV[9])
  publish(epoch, int(version))
  return {1, 'ok', 0}
elseif op == 'found' or op == 'restore' then
  -- As seen (4), then epoch, version, prev (found) or '' (restore), hash,
  -- schema, blob, seed, settle_ms. found begins a history with its first
  -- record; restore puts a snapshot of one back as its base.
  if not as_seen(3) then
    return {0, 'moved', 0}
  end
  local epoch, version, prev, hash = ARGV[7], num(8), ARGV[9], ARGV[10]
  redis.call('DEL', log, base)
  if op == 'found' then
    redis.call('XADD', log, int(version) .. '-0', 'v', int(version), 'e',
               epoch, 'p', prev, 'h', hash, 's', ARGV[11], 'b', ARGV[12])
  else
    redis.call('HSET', base, 'e', epoch, 'v', int(version), 'h', hash, 's',
               ARGV[11], 'b', ARGV[12])
  end
  redis.call('DEL', head)
  redis.call('HSET', head, 'epoch', epoch, 'version', int(version), 'hash',
             hash, 'seed', ARGV[13], 'settle_until', int(now + num(14)))
  publish(epoch, int(version))
  return {1, 'ok', 0}
elseif op == 'compact' then
  -- epoch, version, hash, schema, blob, keep: the base becomes this
  -- snapshot if it is newer and of the head's history, and the log keeps
  -- the keep records before it and all after.
  local epoch, version, keep = ARGV[3], num(4), num(8)
  if get(head, 'epoch') ~= epoch
      or tonumber(get(head, 'version') or '0') < version
      or (get(base, 'e') == epoch
          and tonumber(get(base, 'v') or '0') >= version) then
    return {0, 'moved', 0}
  end
  redis.call('HSET', base, 'e', epoch, 'v', int(version), 'h', ARGV[5], 's',
             ARGV[6], 'b', ARGV[7])
  local from = version - keep + 1
  if from > 1 then
    redis.call('XTRIM', log, 'MINID', int(from) .. '-0')
  end
  return {1, 'ok', 0}
elseif op == 'read' then
  -- after, count: the log's records after version after, count at most,
  -- each as v, e, p, h, s, b.
  local after, count = num(3), num(4)
  local out = {first_version(), tonumber(get(base, 'v') or '0')}
  local rows = redis.call('XRANGE', log, int(after + 1) .. '-0', '+', 'COUNT',
                          count)
  for _, row in ipairs(rows) do
    local f, fields = {}, row[2]
    for k = 1, #fields, 2 do
      f[fields[k]] = fields[k + 1]
    end
    for _, name in ipairs({'v', 'e', 'p', 'h', 's', 'b'}) do
      out[#out + 1] = f[name] or ''
    end
  end
  return out
elseif op == 'base' then
  if redis.call('EXISTS', base) == 0 then
    return {}
  end
  return redis.call('HMGET', base, 'e', 'v', 'h', 's', 'b')
elseif op == 'beat' then
  -- instance, JSON, keep_ms: this instance's heartbeat, and those older
  -- than keep_ms go.
  local keep = num(5)
  local all = redis.call('HGETALL', members)
  for k = 1, #all, 2 do
    local at = tonumber(string.match(all[k + 1], '^(%d+) ') or '0')
    if at < now - keep then
      redis.call('HDEL', members, all[k])
    end
  end
  redis.call('HSET', members, ARGV[3], int(now) .. ' ' .. ARGV[4])
  return {now}
elseif op == 'members' then
  local out = {int(now)}
  local all = redis.call('HGETALL', members)
  for k = 1, #all do
    out[#out + 1] = all[k]
  end
  return out
end
error('bad fleet op: ' .. tostring(op))
