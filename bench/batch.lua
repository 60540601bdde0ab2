-- SPDX-License-Identifier: Apache-2.0
-- batch: several checks in one FCALL, for bench/script_cost.sh only (the
-- experiment of issue 20, measured and not taken into the service: see
-- docs/performance-log.md). script_cost.sh appends this file to the
-- function library the service composes (`abuseguard lua library`), where
-- the library's locals are in reach, and registers check_batch.
--
-- Each check runs exactly as check.lua runs it alone (check, over its
-- slice of KEYS and ARGV), in order, all at one reading of the clock:
-- Redis's fixed cost of a call (reading and dispatching the command, the
-- ACL, entering Lua, TIME) is paid once for all of them. Each check is
-- still all or nothing on its own: a denied check writes nothing, and a
-- check touches another only through the state they share, as the same
-- checks sent one after another would.
--
-- KEYS: each check's keys (check.lua's layout), one check after another.
-- ARGV: per check, its key count and its argument count, decimal, then
--   its arguments (check.lua's layout).
-- Returns one element per check, in order: the check's reply as check.lua
-- returns it, or an error reply if that check raised one (the others
-- still run: a Lua error does not undo what a check wrote before it, so
-- one check's error is that check's alone, as when sent alone). A batch
-- whose counts do not add up raises an error before any check runs.

-- The counts a batch carries, text to number without a tonumber (glibc's
-- strtod, about a thousand instructions each): 0 to 256, more than a
-- check of AG_PLAN_MAX (32) policies has keys (97) or arguments (68).
-- Built once, when the library loads (with no tostring in reach).
local counts = {}
for c = 0, 256 do
  counts[c .. ''] = c
end

local function check_batch(KEYS, ARGV)
  rcall, rpcall, type_of, ceil = redis.call, redis.pcall, type, math.ceil
  -- First the layout, all of it: a batch that does not add up runs
  -- nothing.
  local nargv, nchecks, k, a = #ARGV, 0, 0, 1
  while a <= nargv do
    local nk, na = counts[ARGV[a]], counts[ARGV[a + 1]]
    if not nk or not na then
      error('bad batch counts at argument ' .. a)
    end
    nchecks, k, a = nchecks + 1, k + nk, a + 2 + na
  end
  if k ~= #KEYS or a ~= nargv + 1 then
    error('bad batch layout: ' .. #KEYS .. ' keys, ' .. nargv .. ' args')
  end
  now_text = clock()
  local now = tonumber(now_text)
  -- Built at its full size, as check.lua's out (the values copied in are
  -- all overwritten).
  local replies = {unpack(ARGV, 1, nchecks)}
  k, a = 0, 1
  for i = 1, nchecks do
    local nk, na = counts[ARGV[a]], counts[ARGV[a + 1]]
    local ok, r = pcall(check, KEYS, ARGV, k, nk, a + 1, na, now)
    if not ok then
      -- A redis.call error is a table holding err; an error() a string.
      r = {err = type_of(r) == 'table' and r.err or tostring(r)}
    end
    replies[i] = r
    k, a = k + nk, a + 2 + na
  end
  return replies
end
