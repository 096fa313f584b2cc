package queue

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// toFront moves a job id from the back of asynq's pending list (where
// enqueue LPUSHes it) to its front (where dequeue RPOPLPUSHes from; asynq
// v0.26.0). A job already delivered is not in the list: nothing moves.
var toFront = redis.NewScript(`
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 1 then redis.call('RPUSH', KEYS[1], ARGV[1]) end
return 0`)

// EnqueueFront is Enqueue for a job to be delivered next on its queue,
// ahead of the jobs that wait there: a task taken back from a lost worker
// already ran and has waited its turn once, so it does not wait behind
// the whole pending backlog again. (Between the enqueue and the move, a
// worker may take the job: it is then delivered at once anyway.)
func (c *Client) EnqueueFront(ctx context.Context, j Job) error {
	if err := c.Enqueue(ctx, j); err != nil {
		return err
	}
	pending := "asynq:{" + c.keys.Queue(j.Queue) + "}:pending"
	return toFront.Run(ctx, c.rdb, []string{pending}, ID(j.Ref, j.Seq)).Err()
}
