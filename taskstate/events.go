package taskstate

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/proto"
)

// Payloads on a task's events channel:
//
//   - a state change: the JSON object scripts/prelude.lua's announce
//     publishes (the record's new version, status, statusMessage,
//     lastUpdatedAt and cancel flag, and a completed task's short result);
//   - EventExpired when the reaper removed the task;
//   - EventNotifyPrefix followed by a JSON-RPC notification (progress, log)
//     for the request waiting on the task;
//   - EventResync, which no one publishes: the Hub delivers it on every
//     channel it had to subscribe again after its connection to Redis broke,
//     since payloads published meanwhile are lost.
//
// DecodeEvent is the one reader of these payloads.
const (
	EventNotifyPrefix = "n:"
	// EventExpired is published when the reaper removed an expired task.
	EventExpired = "expired"
	// EventResync is delivered by the Hub after a reconnection.
	EventResync = "resync"
)

// Event is one decoded payload of a task's events channel.
type Event struct {
	// Status is the task's status after a state change; empty for other events.
	Status proto.TaskStatus
	// Version is the record's version after the change (Record.Version):
	// events of one task carry increasing versions. 0 when the payload named
	// a status only (a bare status, as scripts published before versions):
	// the other fields are then unknown and the record must be read.
	Version int64
	// StatusMessage, LastUpdatedAt and CancelRequested are the record's
	// fields after the change (Version > 0 only).
	StatusMessage   string
	LastUpdatedAt   time.Time
	CancelRequested bool
	// Notification is a relayed JSON-RPC notification (JSON), if this is one.
	Notification string
	// Expired: the reaper removed the task.
	Expired bool
	// Resync: events may have been lost; read the record.
	Resync bool
	// Result is a completed task's result (JSON) when the event carries it
	// (EventResultMax): it is then the record's Result exactly.
	Result json.RawMessage
}

// DecodeEvent reads a payload of a task's events channel. A payload it
// does not know decodes to the zero Event, which readers ignore.
func DecodeEvent(payload string) Event {
	if n, ok := strings.CutPrefix(payload, EventNotifyPrefix); ok {
		return Event{Notification: n}
	}
	switch payload {
	case EventExpired:
		return Event{Expired: true}
	case EventResync:
		return Event{Resync: true}
	}
	if !strings.HasPrefix(payload, "{") {
		if st := proto.TaskStatus(payload); validStatus(st) {
			return Event{Status: st}
		}
		return Event{}
	}
	var w struct {
		Version       int64            `json:"version"`
		Status        proto.TaskStatus `json:"status"`
		StatusMessage string           `json:"statusMessage"`
		LastUpdatedAt string           `json:"lastUpdatedAt"`
		Cancel        string           `json:"cancel"`
		Result        json.RawMessage  `json:"result"`
	}
	if json.Unmarshal([]byte(payload), &w) != nil || w.Version <= 0 || !validStatus(w.Status) {
		return Event{}
	}
	return Event{Status: w.Status, Version: w.Version, StatusMessage: w.StatusMessage,
		LastUpdatedAt: parseMs(w.LastUpdatedAt), CancelRequested: w.Cancel == "1", Result: w.Result}
}

// validStatus reports whether st is one of the task statuses (not StatusNew).
func validStatus(st proto.TaskStatus) bool {
	return st != StatusNew && slices.Contains(allStatuses, st)
}

// Notify publishes a notification (JSON) to whoever waits on the task;
// nobody listening means nobody gets it. One sent before the task ended
// arrives before its end, on a Redis Cluster too.
func (s *Store) Notify(ctx context.Context, ref Ref, notification []byte) error {
	// It publishes from the node that holds the task's record (a script
	// keyed on it): a Redis Cluster keeps the order of messages per
	// publishing node only, and the scripts announce the task's states from
	// that node (a plain PUBLISH goes to any node).
	return notifyScript.Run(ctx, s.rdb, []string{s.keys.Task(ref)}, s.keys.Events(ref),
		EventNotifyPrefix+string(notification)).Err()
}

// notifyScript publishes ARGV[2] on channel ARGV[1] from the node of KEYS[1].
var notifyScript = redis.NewScript("return redis.call('PUBLISH', ARGV[1], ARGV[2])")
