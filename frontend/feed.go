package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// A listen stream shows each state of a task once and in order. The state
// last shown is kept as a record; every state change arrives as an event
// carrying the record's new version and the fields that move with a state
// (events.Event). An event no newer than what was shown is dropped: it was
// published before the snapshot the stream started from, or repeats a state
// already shown. A working state is built from the event alone, so a task
// that ran and ended within a millisecond still shows its "working" before
// its "completed". Only a state that carries more than the event (the input
// requests of input_required, the result or error of an end) reads the
// record, and a read that already shows a later state does not stand in for
// the event's (the later state gets its own event).

// rereadEvery is how soon a listen stream reads a task's record again after
// a read for one of its events failed.
const rereadEvery = 500 * time.Millisecond

// applyTask moves the listener's view of the task at ref on by ev, sending
// the new state if there is one; false when the record could not be read.
func (s *Server) applyTask(ctx context.Context, last map[string]*taskstate.Record, ref taskstate.Ref,
	ev events.Event, sendTask func(*taskstate.Record)) bool {
	next, isNew, err := s.nextState(ctx, last[ref.ID], ev)
	switch {
	case err != nil:
		s.log.Warn("listen: task record unreadable; reading it again shortly", "task", ref.ID, "err", err)
		return false
	case isNew:
		sendTask(next)
	case next != nil:
		last[ref.ID] = next
	}
	return true
}

// nextState returns the state an event moves a listener on to from last (the
// state it showed) and whether that state is new to it. The returned record,
// when not nil, is what the listener has seen from now on, even unsent (a
// repeat of the same state at a new version). An error means the record
// could not be read (Redis away): the caller reads it again a little later
// (a resync event), so the state is not lost.
func (s *Server) nextState(ctx context.Context, last *taskstate.Record, ev events.Event) (*taskstate.Record, bool, error) {
	switch {
	case last.Status.Terminal():
		return nil, false, nil // nothing follows an end
	case ev.Expired:
		// The reaper removed it: say so once, as a final failed state.
		n := *last
		n.Status, n.StatusMessage, n.InputRequests = proto.StatusFailed, "Expired", nil
		n.Error = proto.NewError(proto.CodeInternalError, "Task expired: its ttlMs passed")
		return &n, true, nil
	case ev.Status == "" && !ev.Resync:
		return nil, false, nil // a notification for a waiting request, or unknown
	case ev.Version > 0 && ev.Version <= last.Version:
		return nil, false, nil // shown already
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
		gone := errors.Is(err, taskstate.ErrNotFound) || errors.Is(err, taskstate.ErrExpired)
		switch {
		case gone && ev.Version == 0:
			return nil, false, nil // nothing to show; a reaped task's "expired" follows
		case gone:
			next = fromEvent() // gone meanwhile: the event's own fields
		case err != nil:
			return nil, false, err
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
			return nil, false, nil
		}
	}
	return next, !sameState(last, next), nil
}

// sameState reports whether a listener that saw a would learn nothing from b.
func sameState(a, b *taskstate.Record) bool {
	return a.Status == b.Status && a.StatusMessage == b.StatusMessage && a.LastUpdatedAt.Equal(b.LastUpdatedAt) &&
		maps.EqualFunc(a.InputRequests, b.InputRequests, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}
