-- heartbeat.lua: between steps, a worker proves it still owns the task and
-- asks whether to go on.
-- KEYS[1] task hash
-- ARGV[1] now (unix ms)   ARGV[2] attempt   ARGV[3] lost-after (ms)   ARGV[4] task id
-- Returns OK (go on; heartbeat written), CANCELLED (a cancel was requested),
-- STALE (a newer attempt owns the task), TERMINAL, EXPIRED or NOT_FOUND.
-- Writes only the heartbeat, and only on OK or CANCELLED; a task a
-- per-principal share counts (its 'slot' names the running set of its
-- queue, claim.lua) keeps its place there for lost-after more.
local f = redis.call('HMGET', KEYS[1], 'status', 'cancel', 'createdAt', 'ttlMs', 'attempt', 'slot')
if not f[1] then return NOT_FOUND end
if expired(f[3], f[4], ARGV[1]) then return EXPIRED end
if terminal(f[1]) then return TERMINAL end
if (f[5] or '0') ~= ARGV[2] then return STALE end
redis.call('HSET', KEYS[1], 'heartbeat', ARGV[1])
if f[6] then redis.call('ZADD', f[6], tonumber(ARGV[1]) + tonumber(ARGV[3]), ARGV[4]) end
if f[2] == '1' then return CANCELLED end
return OK
