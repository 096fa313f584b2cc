-- fair_drop.lua: delete a job that waits in its principal's list of the
-- queue (fair_enqueue.lua), as asynq's inspector deletes a pending one.
-- KEYS[1] the job's asynq task hash   KEYS[2] the queue's pending list
-- ARGV[1] the job id
-- Returns 1 (deleted) or 0 (not waiting there: ask asynq).
local f = redis.call('HMGET', KEYS[1], 'state', 'mcpq_o')
if f[1] ~= 'pending' or not f[2] then return 0 end
local base = string.sub(KEYS[2], 1, -8)
local list = base .. 'mcpq:w:' .. f[2]
if redis.call('LREM', list, 0, ARGV[1]) == 0 then return 0 end
redis.call('DECR', base .. 'mcpq:n')
if redis.call('LLEN', list) == 0 then redis.call('ZREM', base .. 'mcpq:waiters', f[2]) end
redis.call('HINCRBY', base .. 'mcpq:meta', 'v', 1)
redis.call('DEL', KEYS[1])
return 1
