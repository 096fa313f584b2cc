package queue

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// toFront moves a job to the front of its queue: out of its principal's
// waiting list (fair_enqueue.lua puts it there, with the counts
// fair_drop.lua undoes) or from the back of asynq's pending list, to the
// front of asynq's pending list, which fair_dequeue.lua takes before any
// principal's list (RPOPLPUSH from the right; asynq v0.26.0). A job
// already delivered is in neither list: nothing moves.
// KEYS[1] the job's asynq task hash   KEYS[2] the queue's pending list
// ARGV[1] the job id
var toFront = redis.NewScript(`
local owner = redis.call('HGET', KEYS[1], 'mcpq_o')
if owner then
  local base = string.sub(KEYS[2], 1, -8)
  local list = base .. 'mcpq:w:' .. owner
  if redis.call('LREM', list, 0, ARGV[1]) > 0 then
    redis.call('DECR', base .. 'mcpq:n')
    if redis.call('LLEN', list) == 0 then redis.call('ZREM', base .. 'mcpq:waiters', owner) end
    redis.call('HINCRBY', base .. 'mcpq:meta', 'v', 1)
    redis.call('RPUSH', KEYS[2], ARGV[1])
    return 1
  end
end
if redis.call('LREM', KEYS[2], 1, ARGV[1]) == 1 then redis.call('RPUSH', KEYS[2], ARGV[1]) return 1 end
return 0`)

// EnqueueFront is Enqueue for a job to be delivered next on its queue,
// ahead of the jobs that wait there, every principal's included: a task
// taken back from a lost worker already ran and has waited its turn once,
// so it does not wait behind the whole backlog again. (Between the enqueue
// and the move, a worker may take the job: it is then delivered at once
// anyway.)
func (c *Client) EnqueueFront(ctx context.Context, j Job) error {
	if err := c.Enqueue(ctx, j); err != nil {
		return err
	}
	q, id := c.keys.Queue(j.Queue), ID(j.Ref, j.Seq)
	return toFront.Run(ctx, c.rdb, []string{"asynq:{" + q + "}:t:" + id, "asynq:{" + q + "}:pending"}, id).Err()
}
