-- ttl.lua: change a live task's ttlMs (still counted from createdAt), e.g.
-- to extend it while it waits for a human.
-- KEYS[1] task hash   KEYS[2] the owner's deadline index
-- ARGV[1] now (unix ms)   ARGV[2] attempt ('' = any: not a worker write)
-- ARGV[3] new ttlMs   ARGV[4] grace (ms)   ARGV[5] task id
-- An ended task is refused (TERMINAL), so the record has no companion yet
-- (Keys.TaskExtra: written only when a task ends, prelude compact()) whose
-- expiry would have to follow.
-- Returns OK, or NOT_FOUND, EXPIRED, TERMINAL, STALE, ILLEGAL (the new
-- deadline is already past); nothing is written then.
local f = redis.call('HMGET', KEYS[1], 'status', 'createdAt', 'ttlMs', 'attempt')
if not f[1] then return NOT_FOUND end
if expired(f[2], f[3], ARGV[1]) then return EXPIRED end
if terminal(f[1]) then return TERMINAL end
if ARGV[2] ~= '' and (f[4] or '0') ~= ARGV[2] then return STALE end
local deadline = tonumber(f[2]) + tonumber(ARGV[3])
if deadline <= tonumber(ARGV[1]) then return ILLEGAL end
redis.call('HSET', KEYS[1], 'ttlMs', ARGV[3], 'lastUpdatedAt', ARGV[1])
redis.call('PEXPIREAT', KEYS[1], deadline + tonumber(ARGV[4]))
redis.call('ZADD', KEYS[2], deadline, ARGV[5])
return OK
