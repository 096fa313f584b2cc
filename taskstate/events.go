package taskstate

import (
	"context"
	"strings"
)

// Payloads on a task's events channel: a status name after each state
// change, EventCancel for a cancel request, or EventNotifyPrefix followed by
// a JSON-RPC notification (progress, log) for the request waiting on the task.
const (
	EventCancel       = "cancel"
	EventNotifyPrefix = "n:"
)

// Notify publishes a notification (JSON) to whoever waits on the task.
// Notifications are ephemeral: nobody listening means nobody gets them.
func (s *Store) Notify(ctx context.Context, ref Ref, notification []byte) error {
	return s.rdb.Publish(ctx, s.keys.Events(ref), EventNotifyPrefix+string(notification)).Err()
}

// IsNotification splits a notification payload off an event.
func IsNotification(event string) (string, bool) {
	return strings.CutPrefix(event, EventNotifyPrefix)
}

// EventExpired is published when the reaper removed an expired task.
const EventExpired = "expired"
