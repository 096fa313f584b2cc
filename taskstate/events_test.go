package taskstate_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// TestStateEvents: every state change publishes the record's new version
// (one more than the last), status, statusMessage, lastUpdatedAt and cancel
// flag, exactly as a read of the record right after shows them.
func TestStateEvents(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		ref := e.create(t, taskstate.CreateParams{})
		w := e.watch(t, ref)
		version := int64(0)
		check := func(what string, wantStatus proto.TaskStatus) {
			t.Helper()
			ev := events.Decode(w.next(t))
			rec := e.get(t, ref)
			version++
			if ev.Version != version || rec.Version != version {
				t.Fatalf("%s: event version %d, record %d, want %d", what, ev.Version, rec.Version, version)
			}
			if ev.Status != wantStatus || ev.Status != rec.Status || ev.StatusMessage != rec.StatusMessage ||
				!ev.LastUpdatedAt.Equal(rec.LastUpdatedAt) || ev.CancelRequested != rec.CancelRequested {
				t.Fatalf("%s: event %+v, record %+v", what, ev, rec)
			}
		}
		a := e.claim(t, ref)
		check("claim", proto.StatusWorking)
		e.clock.Advance(time.Millisecond)
		if err := e.s.Progress(ctx(t), ref, a, `half "way" \ done`); err != nil {
			t.Fatal(err)
		}
		check("progress", proto.StatusWorking)
		e.clock.Advance(time.Millisecond)
		reqs := map[string]json.RawMessage{"a": json.RawMessage(`{"method":"elicitation/create","params":{}}`),
			"b": json.RawMessage(`{"method":"elicitation/create","params":{}}`)}
		if err := e.s.RequestInput(ctx(t), ref, a, reqs); err != nil {
			t.Fatal(err)
		}
		check("input", proto.StatusInputRequired)
		e.clock.Advance(time.Millisecond)
		if _, err := e.s.Answer(ctx(t), ref, map[string]json.RawMessage{"a": json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		check("partial answer", proto.StatusInputRequired)
		if _, err := e.s.Answer(ctx(t), ref, map[string]json.RawMessage{"b": json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		check("last answer", proto.StatusWorking)
		a = e.claim(t, ref)
		check("claim after input", proto.StatusWorking)
		if err := e.s.RequestCancel(ctx(t), ref); err != nil {
			t.Fatal(err)
		}
		check("cancel request", proto.StatusWorking)
		if !e.get(t, ref).CancelRequested {
			t.Fatal("cancel flag not set")
		}
		if err := e.s.Finish(ctx(t), ref, a, outcome(proto.StatusCancelled)); err != nil {
			t.Fatal(err)
		}
		check("finish", proto.StatusCancelled)
		w.quiet(t)
	})
}

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		payload string
		want    events.Event
	}{
		{`{"version":3,"status":"working","statusMessage":"Running","lastUpdatedAt":"1700000000123","cancel":"1"}`,
			events.Event{Version: 3, Status: proto.StatusWorking, StatusMessage: "Running",
				LastUpdatedAt: time.UnixMilli(1700000000123), CancelRequested: true}},
		{`{"version":1,"status":"completed"}`, events.Event{Version: 1, Status: proto.StatusCompleted}},
		{"completed", events.Event{Status: proto.StatusCompleted}}, // a bare status: read the record
		{events.Expired, events.Event{Expired: true}},
		{events.Resync, events.Event{Resync: true}},
		{events.NotifyPrefix + `{"method":"x"}`, events.Event{Notification: `{"method":"x"}`}},
		{`{"version":0,"status":"working"}`, events.Event{}},
		{`{"version":2,"status":"bogus"}`, events.Event{}},
		{`{"version":2`, events.Event{}},
		{"cancel", events.Event{}},
		{"", events.Event{}},
	} {
		got := events.Decode(c.payload)
		if got.Status != c.want.Status || got.Version != c.want.Version || got.StatusMessage != c.want.StatusMessage ||
			!got.LastUpdatedAt.Equal(c.want.LastUpdatedAt) || got.CancelRequested != c.want.CancelRequested ||
			got.Notification != c.want.Notification || got.Expired != c.want.Expired || got.Resync != c.want.Resync {
			t.Errorf("events.Decode(%q) = %+v, want %+v", c.payload, got, c.want)
		}
	}
}

// TestCompletedEventCarriesResult: the event of a completed task carries
// its result, byte for byte what a read of the record gives, up to
// EventResultMax bytes and only when no reservation settled (a receipt
// joins the result on read); a waiting call answers from it alone.
func TestCompletedEventCarriesResult(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		text := func(n int) json.RawMessage { // a result of exactly n bytes
			const shell = `{"content":[{"type":"text","text":""}]}`
			return json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", n-len(shell)) + `"}]}`)
		}
		finish := func(p taskstate.CreateParams, out taskstate.Outcome) (events.Event, *taskstate.Record) {
			t.Helper()
			ref := e.create(t, p)
			a := e.claim(t, ref)
			w := e.watch(t, ref)
			if err := e.s.Finish(ctx(t), ref, a, out); err != nil {
				t.Fatal(err)
			}
			return events.Decode(w.next(t)), e.get(t, ref)
		}
		for _, n := range []int{64, 65, 1000, taskstate.EventResultMax} {
			out := outcome(proto.StatusCompleted)
			out.Result = text(n)
			ev, rec := finish(taskstate.CreateParams{}, out)
			if ev.Status != proto.StatusCompleted || string(ev.Result) != string(rec.Result) || len(ev.Result) != n {
				t.Fatalf("%d-byte result: event carries %d bytes (%+v), record %d", n, len(ev.Result), ev.Status, len(rec.Result))
			}
		}
		out := outcome(proto.StatusCompleted)
		out.Result = text(taskstate.EventResultMax + 1)
		if ev, rec := finish(taskstate.CreateParams{}, out); ev.Result != nil || len(rec.Result) != taskstate.EventResultMax+1 {
			t.Fatalf("a result over EventResultMax: event carries %d bytes, record %d", len(ev.Result), len(rec.Result))
		}
		if ev, _ := finish(taskstate.CreateParams{}, outcome(proto.StatusFailed)); ev.Result != nil || ev.Status != proto.StatusFailed {
			t.Fatalf("failed: event %+v", ev)
		}
		e.credit(t, principal, 10)
		one := int64(1)
		ev, rec := finish(taskstate.CreateParams{Reserve: &one}, outcome(proto.StatusCompleted))
		if ev.Result != nil || rec.Receipt == nil || !strings.Contains(string(rec.Result), string(proto.MetaReceipt)) {
			t.Fatalf("billed: event result %s, record result %s", ev.Result, rec.Result)
		}
	})
}

// TestNotifyBeforeEnd: a notification sent while the task runs reaches a
// listener before the task's end, also on a Redis Cluster, where the order
// of messages holds only per publishing node (Notify publishes from the
// record's node, as finish.lua does).
func TestNotifyBeforeEnd(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		h := newHub(t, b)
		for i := range 30 {
			ref := e.create(t, taskstate.CreateParams{})
			sub := subscribe(t, h, e.s.Keys().Events(ref))
			a := e.claim(t, ref)
			expectRecv(t, sub, "working")
			if err := e.s.Notify(ctx(t), ref, []byte(`{"method":"notifications/progress"}`)); err != nil {
				t.Fatal(err)
			}
			if err := e.s.Finish(ctx(t), ref, a, outcome(proto.StatusCompleted)); err != nil {
				t.Fatal(err)
			}
			if ev := events.Decode(recv(t, sub)); ev.Notification == "" {
				t.Fatalf("task %d: the end (%+v) arrived before the notification sent before it", i, ev)
			}
			expectRecv(t, sub, "completed")
		}
	})
}
