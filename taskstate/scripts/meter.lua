-- meter.lua: a worker reports metered usage of the task (billing.go).
-- KEYS[1] task hash   KEYS[2] the owner's holds
-- ARGV[1] now (unix ms)   ARGV[2] attempt   ARGV[3] units to add (> 0)
-- ARGV[4] task id
-- Returns {OK, usage, reserved}: the task's usage so far and its
-- reservation (usage above it is charged only up to it at settlement);
-- {OK, 0, -1} when the task holds no reservation (a free tool, or billing
-- off: nothing written). Or {code}: NOT_FOUND, EXPIRED, TERMINAL, STALE
-- (nothing written).
local f = redis.call('HMGET', KEYS[1], 'status', 'createdAt', 'ttlMs', 'attempt')
if not f[1] then return {NOT_FOUND} end
if expired(f[2], f[3], ARGV[1]) then return {EXPIRED} end
if terminal(f[1]) then return {TERMINAL} end
if (f[4] or '0') ~= ARGV[2] then return {STALE} end
local hold = redis.call('HGET', KEYS[2], 'r:' .. ARGV[4])
if not hold then return {OK, 0, -1} end
local usage = redis.call('HINCRBY', KEYS[2], 'u:' .. ARGV[4], ARGV[3])
return {OK, usage, tonumber(string.match(hold, '^(%d+)'))}
