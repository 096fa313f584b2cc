-- release.lua: a delivery gives up its hold without an outcome (its worker
-- shuts down; the job goes back to its queue): the task stays working and
-- unclaimed, so the job's next delivery claims it at once (claim.lua
-- refuses a task another live worker holds).
-- KEYS[1] task hash   KEYS[2] the owner's held index
-- ARGV[1] now (unix ms)   ARGV[2] attempt   ARGV[3] task id
-- Returns OK, STALE (another attempt holds it), TERMINAL, EXPIRED or NOT_FOUND.
local f = redis.call('HMGET', KEYS[1], 'status', 'createdAt', 'ttlMs', 'running')
if not f[1] then return NOT_FOUND end
if expired(f[2], f[3], ARGV[1]) then return EXPIRED end
if terminal(f[1]) then return TERMINAL end
if (f[4] or '0') ~= ARGV[2] then return STALE end
redis.call('HSET', KEYS[1], 'running', 0)
redis.call('HDEL', KEYS[1], 'worker')
redis.call('ZREM', KEYS[2], ARGV[3])
free_slot(ARGV[3])
return OK
