package taskstate

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/taskstate/events"
)

// Notify publishes a notification (JSON) to whoever waits on the task;
// nobody listening means nobody gets it. One sent before the task ended
// arrives before its end, on a Redis Cluster too.
func (s *Store) Notify(ctx context.Context, ref Ref, notification []byte) error {
	// It publishes from the node that holds the task's record (a script
	// keyed on it): a Redis Cluster keeps the order of messages per
	// publishing node only, and the scripts announce the task's states from
	// that node (a plain PUBLISH goes to any node).
	return notifyScript.Run(ctx, s.rdb, []string{s.keys.Task(ref)}, s.keys.Events(ref),
		events.NotifyPrefix+string(notification)).Err()
}

// notifyScript publishes ARGV[2] on channel ARGV[1] from the node of KEYS[1].
var notifyScript = redis.NewScript("return redis.call('PUBLISH', ARGV[1], ARGV[2])")
