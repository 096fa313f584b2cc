package queue

import "strings"

// Keys names what mcpq keeps in asynq and announces about it, under the
// same prefix as the task keys (taskstate.Options.Prefix, default
// taskstate.DefaultPrefix).
type Keys struct {
	// Prefix starts every name; tests use a unique prefix to run in parallel.
	Prefix string
}

// Queue is the asynq queue name of an mcpq queue: asynq's own keys carry
// no prefix, so the prefix goes into the queue name to keep deployments
// apart.
func (k Keys) Queue(name string) string { return k.Prefix + name }

// QueueName is the mcpq queue name of an asynq queue name (Queue's
// inverse); ok is false for a name without the prefix.
func (k Keys) QueueName(asynqQueue string) (name string, ok bool) {
	return strings.CutPrefix(asynqQueue, k.Prefix)
}

// Wake is where a new job on queue (an mcpq queue name) is announced, in
// the same round trip as its enqueue, so an idle worker of the queue
// dequeues it at once instead of at its next poll (dequeue.go). The
// payload is empty. Type: pub/sub channel.
func (k Keys) Wake(queue string) string { return k.Prefix + "wake:" + queue }

// asynqQueuesKey is the set asynq adds each queue name to before its
// first enqueue (asynq v0.26.0, internal/base AllQueues).
const asynqQueuesKey = "asynq:queues"

// pendingQueue is the asynq queue name in asynq's pending list key of a
// queue, "asynq:{<queue>}:pending" (asynq v0.26.0, internal/base
// PendingKey: one of the keys of its enqueue and dequeue scripts); ok is
// false for any other key.
func pendingQueue(key string) (queue string, ok bool) {
	rest, ok := strings.CutPrefix(key, "asynq:{")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "}:pending")
}
