-- progress.lua: a worker sets the task's statusMessage.
-- KEYS[1] task hash
-- ARGV[1] now (unix ms)   ARGV[2] attempt   ARGV[3] statusMessage   ARGV[4] events channel
-- Returns OK, or NOT_FOUND, EXPIRED, TERMINAL, STALE (nothing written).
local f = redis.call('HMGET', KEYS[1], 'status', 'createdAt', 'ttlMs', 'attempt', 'version', 'cancel')
if not f[1] then return NOT_FOUND end
if expired(f[2], f[3], ARGV[1]) then return EXPIRED end
if terminal(f[1]) then return TERMINAL end
if (f[4] or '0') ~= ARGV[2] then return STALE end
local version = tonumber(f[5] or '0') + 1
redis.call('HSET', KEYS[1], 'statusMessage', ARGV[3], 'lastUpdatedAt', ARGV[1], 'heartbeat', ARGV[1],
  'version', version)
announce(ARGV[4], version, f[1], ARGV[3], ARGV[1], f[6] or nil)
return OK
