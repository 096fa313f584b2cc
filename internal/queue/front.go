package queue

import "context"

// frontKey marks an enqueue's context: the job goes to the front of its
// queue (EnqueueFront).
type frontKey struct{}

// frontArg adds fair_enqueue.lua's ARGV[4], "front", to an enqueue
// script's arguments when ctx asks for the front of the queue.
func frontArg(ctx context.Context, args []any) []any {
	if front, _ := ctx.Value(frontKey{}).(bool); front {
		return append(args[:len(args):len(args)], "front")
	}
	return args
}

// EnqueueFront is Enqueue for a job to be delivered next on its queue,
// ahead of the jobs that wait there, every principal's included: a task
// taken back from a lost worker already ran and has waited its turn once,
// so it does not wait behind the whole backlog again. The enqueue script
// puts it at the front of asynq's pending list, which fair_dequeue.lua
// takes before any principal's line, in the same call (no worker can take
// another job between the enqueue and the move).
func (c *Client) EnqueueFront(ctx context.Context, j Job) error {
	return c.Enqueue(context.WithValue(ctx, frontKey{}, true), j)
}
