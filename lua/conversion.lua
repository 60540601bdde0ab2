-- SPDX-License-Identifier: Apache-2.0
-- conversion: sends against verified codes, the OTP endpoint's defence
-- against SMS pumping (a range whose codes are sent and never entered).
-- Two sliding-window counters, each as sliding_window.lua keeps its one:
-- the sends S (the checks it allowed and charged) and the verifications V
-- (recorded in mode "record", never by a check), each the current fixed
-- window's count plus the previous one's weighted by its remaining
-- overlap. A send is allowed while S + 1 <= limit (not yet judging), and
-- after that only while V / S >= min_ratio (the spec's ratio). Denied, it
-- is retried at the end of the current fixed window, the first time the
-- counts can weigh otherwise for certain (simple, and the same in both
-- stores; a send may be denied again then). A verification is always
-- recorded: it is never full, and not even a block stops it (the driver
-- asks `records_blocked`), or a block would keep the ratio down after it.
-- remaining is the sends left before it judges, never below 0.
--
-- A hash per identity holds each counter's window index and counts under
-- its own fields, so that each is written alone: sends `sw`, `s`, `sp`,
-- verifications `vw`, `v`, `vp` (names no other algorithm uses). The key
-- expires at the end of the window after the last one charged. Memory: one
-- hash of six small fields per key, whatever the limit.
local conversion = {needs_ratio = true, records_blocked = true}

-- One counter's current and previous counts at window idx, from the hash's
-- index cw and counts (text or nil).
local function counts_at(idx, cw, c, p)
  cw, c, p = tonumber(cw), tonumber(c) or 0, tonumber(p) or 0
  if cw == idx - 1 then
    return 0, c
  elseif cw ~= idx then
    return 0, 0
  end
  return c, p
end

-- peek hands charge the window index, the current and previous counts of
-- the counter this mode charges (sends in a check, verifications in a
-- record), and S.
function conversion.peek(key, limit, w, member, now, ratio)
  local idx = math.floor(now / w)
  local h = read(key, rpcall('HMGET', key, 'sw', 's', 'sp', 'vw', 'v', 'vp'))
    or {}
  local cs, ps = counts_at(idx, h[1], h[2], h[3])
  local cv, pv = counts_at(idx, h[4], h[5], h[6])
  local elapsed = now - idx * w
  local weight = 1 - elapsed / w
  local sends = ps * weight + cs
  local reset_ms
  if cs > 0 or cv > 0 then
    reset_ms = ms((idx + 2) * w - now)
  elseif ps > 0 or pv > 0 then
    reset_ms = ms((idx + 1) * w - now)
  else
    reset_ms = 0
  end
  local remaining = math.max(math.floor(limit - sends), 0)
  if recording then
    return true, remaining, 0, reset_ms, idx, cv, pv, sends
  end
  if sends + 1 <= limit or (pv * weight + cv) / sends >= ratio then
    return true, remaining, 0, reset_ms, idx, cs, ps, sends
  end
  return false, 0, ms((idx + 1) * w - now), reset_ms, idx, cs, ps, sends
end

function conversion.charge(key, limit, w, window_ms, member, now,
                           idx, c, p, sends)
  local remaining
  if recording then
    rcall('HSET', key, 'vw', int(idx), 'v', int(c + 1), 'vp', int(p))
    remaining = math.max(math.floor(limit - sends), 0)
  else
    rcall('HSET', key, 'sw', int(idx), 's', int(c + 1), 'sp', int(p))
    remaining = math.max(math.floor(limit - (sends + 1)), 0)
  end
  rcall('PEXPIREAT', key, int(ceil((idx + 2) * w / 1000)))
  return remaining, ms((idx + 2) * w - now), recording and 0 or idx
end

-- Undo: a send's window index, as sliding_window's (a verification is
-- recorded, never reserved, so never released). Its count is `s` while
-- `sw` is that window, `sp` once a later send moved it on by one.
function conversion.release(key, limit, w, member, nonce, undo, now)
  local h = read(key, rpcall('HMGET', key, 'sw', 's', 'sp')) or {}
  local cw = tonumber(h[1])
  local field, count
  if cw == undo then
    field, count = 's', tonumber(h[2]) or 0
  elseif cw == undo + 1 then
    field, count = 'sp', tonumber(h[3]) or 0
  else
    return false
  end
  if count <= 0 then
    return false
  end
  rcall('HSET', key, field, int(count - 1))
  return true
end
