package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// A listen stream shows each state of a task once and in order. The state
// last shown is kept as a record; every state change arrives as an event
// carrying the record's new version and the fields that move with a state
// (taskstate.Event). An event no newer than what was shown is dropped: it was
// published before the snapshot the stream started from, or repeats a state
// already shown. A working state is built from the event alone, so a task
// that ran and ended within a millisecond still shows its "working" before
// its "completed". Only a state that carries more than the event (the input
// requests of input_required, the result or error of an end) reads the
// record, and a read that already shows a later state does not stand in for
// the event's (the later state gets its own event).

// nextState returns the state an event moves a listener on to from last (the
// state it showed) and whether that state is new to it. The returned record,
// when not nil, is what the listener has seen from now on, even unsent (a
// repeat of the same state at a new version).
func (s *Server) nextState(ctx context.Context, last *taskstate.Record, ev taskstate.Event) (*taskstate.Record, bool) {
	switch {
	case last.Status.Terminal():
		return nil, false // nothing follows an end
	case ev.Expired:
		// The reaper removed it: say so once, as a final failed state.
		n := *last
		n.Status, n.StatusMessage, n.InputRequests = proto.StatusFailed, "Expired", nil
		n.Error = proto.NewError(proto.CodeInternalError, "Task expired: its ttlMs passed")
		return &n, true
	case ev.Status == "" && !ev.Resync:
		return nil, false // a notification for a waiting request, or unknown
	case ev.Version > 0 && ev.Version <= last.Version:
		return nil, false // shown already
	}
	var next *taskstate.Record
	fromEvent := func() *taskstate.Record {
		n := *last
		n.Status, n.StatusMessage, n.LastUpdatedAt = ev.Status, ev.StatusMessage, ev.LastUpdatedAt
		n.CancelRequested, n.Version, n.InputRequests = ev.CancelRequested, ev.Version, nil
		return &n
	}
	if ev.Version > 0 && ev.Status == proto.StatusWorking {
		next = fromEvent()
	} else {
		rec, err := s.store.Get(ctx, last.Ref)
		switch {
		case err != nil && ev.Version == 0:
			return nil, false // nothing to show; a reaped task's "expired" follows
		case err != nil:
			next = fromEvent() // gone meanwhile: the event's own fields
		case ev.Version == 0 || rec.Version == ev.Version:
			next = rec // a resync or bare status shows the task as it is now
		default:
			// The record moved on already: this state from the event, with
			// the input requests still pending in it.
			next = fromEvent()
			if ev.Status == proto.StatusInputRequired && rec.Status == proto.StatusInputRequired {
				next.InputRequests = rec.InputRequests
			}
			if ev.Status.Terminal() { // an end never changes: the record has it all
				next = rec
			}
		}
		if next.Version > 0 && next.Version < last.Version {
			return nil, false
		}
	}
	return next, !sameState(last, next)
}

// sameState reports whether a listener that saw a would learn nothing from b.
func sameState(a, b *taskstate.Record) bool {
	return a.Status == b.Status && a.StatusMessage == b.StatusMessage && a.LastUpdatedAt.Equal(b.LastUpdatedAt) &&
		maps.EqualFunc(a.InputRequests, b.InputRequests, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}
