-- ratelimit.lua: one request against a principal's token bucket, shared by
-- every front end.
-- KEYS[1] the owner's bucket (hash: tokens, ts)
-- ARGV[1] now (unix ms)   ARGV[2] rate (tokens per second)   ARGV[3] burst (bucket size)
-- Returns {1, 0} when allowed (a token is taken), or {0, ms} to wait
-- before a token is there.
local rate, burst, now = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[1])
local f = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(f[1]), tonumber(f[2])
if not tokens then tokens, ts = burst, now end
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate / 1000)
local allowed, wait = 0, 0
if tokens >= 1 then
  tokens, allowed = tokens - 1, 1
else
  wait = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {allowed, wait}
