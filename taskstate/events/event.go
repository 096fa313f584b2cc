// Package events reads what taskstate's scripts publish on a task's events
// channel (taskstate.Keys.Events): Decode turns a payload into an Event, and
// a Hub multiplexes one process's subscriptions to those channels (and to
// the catalog's) over a single Redis connection. Front ends wait on it for a
// held call and feed listen streams from it; workers follow cancels with it.
package events

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/mcpq/mcpq/proto"
)

// Payloads on a task's events channel:
//
//   - a state change: the JSON object taskstate's scripts/prelude.lua announce
//     publishes (the record's new version, status, statusMessage,
//     lastUpdatedAt and cancel flag, and a completed task's short result);
//   - Expired when the reaper removed the task;
//   - NotifyPrefix followed by a JSON-RPC notification (progress, log)
//     for the request waiting on the task;
//   - Resync, which no one publishes: the Hub delivers it on every
//     channel it had to subscribe again after its connection to Redis broke,
//     since payloads published meanwhile are lost.
//
// Decode is the one reader of these payloads.
const (
	NotifyPrefix = "n:"
	// Expired is published when the reaper removed an expired task.
	Expired = "expired"
	// Resync is delivered by the Hub after a reconnection.
	Resync = "resync"
)

// Event is one decoded payload of a task's events channel.
type Event struct {
	// Status is the task's status after a state change; empty for other events.
	Status proto.TaskStatus
	// Version is the record's version after the change (taskstate.Record.Version):
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
	// (taskstate.EventResultMax): it is then the record's Result exactly.
	Result json.RawMessage
}

// Decode reads a payload of a task's events channel. A payload it
// does not know decodes to the zero Event, which readers ignore.
func Decode(payload string) Event {
	if n, ok := strings.CutPrefix(payload, NotifyPrefix); ok {
		return Event{Notification: n}
	}
	switch payload {
	case Expired:
		return Event{Expired: true}
	case Resync:
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

// validStatus reports whether st is one of the task statuses.
func validStatus(st proto.TaskStatus) bool {
	switch st {
	case proto.StatusWorking, proto.StatusInputRequired, proto.StatusCompleted, proto.StatusFailed, proto.StatusCancelled:
		return true
	}
	return false
}

// parseMs reads unix milliseconds; absent or not a number is the zero time.
func parseMs(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
