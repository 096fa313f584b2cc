-- fair_enqueue.lua: asynq v0.26.0's enqueue script (internal/rdb
-- enqueueCmd: same KEYS, ARGV and answer), but a job that names its
-- principal waits in that principal's list of the queue, not in asynq's
-- one pending list (internal/queue/fair.go).
-- KEYS[1] the job's asynq task hash   KEYS[2] the queue's pending list,
-- "asynq:{<queue>}:pending"
-- ARGV[1] the encoded task message   ARGV[2] the job id   ARGV[3] now (unix ns)
-- ARGV[4] "front" (optional, front.go): the job goes to the front of the
-- queue, where dequeue takes the next job (RPOPLPUSH from the right)
-- Returns 1 (enqueued) or 0 (a job with this id exists).
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
-- The payload (internal/queue/job.go) starts {"o":"<owner tag>","id":"
local owner = nil
if ARGV[4] ~= 'front' then owner = string.match(ARGV[1], '{"o":"([^"\\]+)","id":"') end
if not owner then
  redis.call('HSET', KEYS[1], 'msg', ARGV[1], 'state', 'pending', 'pending_since', ARGV[3])
  if ARGV[4] == 'front' then redis.call('RPUSH', KEYS[2], ARGV[2]) else redis.call('LPUSH', KEYS[2], ARGV[2]) end
  return 1
end
local base = string.sub(KEYS[2], 1, -8) -- "asynq:{<queue>}:"
redis.call('HSET', KEYS[1], 'msg', ARGV[1], 'state', 'pending', 'pending_since', ARGV[3], 'mcpq_o', owner)
if redis.call('LPUSH', base .. 'mcpq:w:' .. owner, ARGV[2]) == 1 then
  redis.call('ZADD', base .. 'mcpq:waiters', ARGV[3], owner)
end
redis.call('INCR', base .. 'mcpq:n')
-- A new waiting job may be runnable where the last dequeue found none
-- (fair_dequeue.lua's "blocked").
redis.call('HINCRBY', base .. 'mcpq:meta', 'v', 1)
return 1
