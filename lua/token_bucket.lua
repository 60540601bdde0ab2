-- SPDX-License-Identifier: Apache-2.0
-- token_bucket: a bucket of capacity `limit`, refilled continuously at
-- limit / window tokens per second; a request takes one token. A hash per
-- identity holds the tokens `t` (a fraction, stored with tostring: 14
-- significant digits, which the fallback store rounds to as well) and the
-- time `ts` of the last update. A missing key is a full bucket, so the key
-- expires when the bucket would be full again. Memory: one hash of two
-- small fields per key, whatever the limit.
local token_bucket = {}

-- peek hands charge the tokens now in the bucket.
function token_bucket.peek(key, limit, window_us, member, now)
  local rate = limit / window_us -- tokens per microsecond
  local h = read(key, rpcall('HMGET', key, 't', 'ts')) or {}
  local tokens, ts = tonumber(h[1]), tonumber(h[2])
  -- Full from the time its expiry is set for on, by the same sum: tokens
  -- refilled by a product can fall a hair short of the limit there, and
  -- no answer may depend on whether Redis has dropped the key yet.
  if tokens == nil or ts == nil or now >= ts + (limit - tokens) / rate then
    tokens = limit
  else
    tokens = math.min(limit, tokens + math.max(0, now - ts) * rate)
  end
  local reset_ms = ms((limit - tokens) / rate)
  if tokens >= 1 then
    return true, math.floor(tokens), 0, reset_ms, tokens
  end
  return false, 0, ms((1 - tokens) / rate), reset_ms, tokens
end

function token_bucket.charge(key, limit, window_us, window_ms, member, now,
                             tokens)
  local rate = limit / window_us
  tokens = tokens - 1
  local full_us = (limit - tokens) / rate
  rcall('HSET', key, 't', tostring(tokens), 'ts', now_text)
  expire_at(key, now + full_us)
  return math.floor(tokens), ms(full_us), 1
end

-- Gives the token back: the bucket refilled to now as peek does, one more,
-- never above the limit, written back as charge writes it. A bucket Redis
-- has dropped is full already: nothing to give back.
function token_bucket.release(key, limit, window_us, member, nonce, undo,
                              now)
  local rate = limit / window_us
  local h = read(key, rpcall('HMGET', key, 't', 'ts')) or {}
  local tokens, ts = tonumber(h[1]), tonumber(h[2])
  if tokens == nil or ts == nil or now >= ts + (limit - tokens) / rate then
    return false
  end
  tokens = math.min(limit, tokens + math.max(0, now - ts) * rate + 1)
  local full_us = (limit - tokens) / rate
  rcall('HSET', key, 't', tostring(tokens), 'ts', now_text)
  expire_at(key, now + full_us)
  return true
end
