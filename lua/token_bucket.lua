-- token_bucket: a bucket of capacity `limit`, refilled continuously at
-- limit / window tokens per second; a request takes one token. A hash per
-- identity holds the tokens `t` (a fraction, stored with tostring) and the
-- time `ts` of the last update. A missing key is a full bucket, so the key
-- expires when the bucket would be full again. Memory: one hash of two
-- small fields per key, whatever the limit.
local token_bucket = {}

function token_bucket.peek(p, now)
  local rate = p.limit / p.window_us -- tokens per microsecond
  local h = read('HMGET', p.key, 't', 'ts') or {}
  local tokens, ts = tonumber(h[1]), tonumber(h[2])
  if tokens == nil or ts == nil then
    tokens = p.limit
  else
    tokens = math.min(p.limit, tokens + math.max(0, now - ts) * rate)
  end
  p.tokens, p.rate = tokens, rate
  p.reset_ms = ms((p.limit - tokens) / rate)
  if tokens >= 1 then
    p.allowed = true
    p.remaining = math.floor(tokens)
    p.retry_ms = 0
  else
    p.allowed = false
    p.remaining = 0
    p.retry_ms = ms((1 - tokens) / rate)
  end
end

function token_bucket.charge(p, now)
  p.tokens = p.tokens - 1
  local full_us = (p.limit - p.tokens) / p.rate
  redis.call('HSET', p.key, 't', tostring(p.tokens), 'ts', now_text)
  redis.call('PEXPIRE', p.key, math.max(ms(full_us), 1))
  p.remaining = math.floor(p.tokens)
  p.reset_ms = ms(full_us)
end

algorithms['3'] = token_bucket
