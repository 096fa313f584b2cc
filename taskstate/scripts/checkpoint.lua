-- checkpoint.lua: a worker saves the handler's checkpoint, so a resumed or
-- re-delivered job continues from it.
-- KEYS[1] task hash
-- ARGV[1] now (unix ms)   ARGV[2] attempt   ARGV[3] checkpoint (JSON)
-- Returns OK, or NOT_FOUND, EXPIRED, TERMINAL, STALE (nothing written).
local f = redis.call('HMGET', KEYS[1], 'status', 'createdAt', 'ttlMs', 'attempt')
if not f[1] then return NOT_FOUND end
if expired(f[2], f[3], ARGV[1]) then return EXPIRED end
if terminal(f[1]) then return TERMINAL end
if (f[4] or '0') ~= ARGV[2] then return STALE end
redis.call('HSET', KEYS[1], 'checkpoint', ARGV[3], 'heartbeat', ARGV[1])
return OK
