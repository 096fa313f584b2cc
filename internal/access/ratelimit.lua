-- ratelimit.lua: one request against a principal's token bucket, shared by
-- every front end.
-- KEYS[1] the principal's bucket (keys.go rate; hash: tokens, ts)
-- ARGV[1] rate (tokens per second)   ARGV[2] burst (bucket size)
-- Returns {1, 0} when allowed (a token is taken), or {0, ms} to wait
-- before a token is there.
-- Time: Redis's own clock (TIME), unlike every script of taskstate, which
-- takes "now" as an argument from the caller's injected clock. A bucket is refilled by the time between two requests, and
-- those requests come from different front ends: on the callers' clocks a
-- bucket gains the skew between two front ends at every alternation (a
-- 20 ms skew was enough to lift the limit, issue 13), so the one clock all
-- callers share decides. Task state is not touched here, so the injected
-- clock still decides every transition. TIME before a write is allowed
-- since Redis 5 (scripts replicate their effects, not the script).
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
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
-- Fixed point, never an exponent: Lua writes a small count as "1e-06",
-- which miniredis's Lua (tests, mcpq dev) reads back as nil, a full bucket.
redis.call('HSET', KEYS[1], 'tokens', string.format('%.12f', tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {allowed, wait}
