package taskstate_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/timeline"
)

// kinds is the timeline's entry kinds with their attempt, worker and detail.
func kinds(tl []timeline.Entry) []string {
	out := make([]string, len(tl))
	for i, e := range tl {
		out[i] = e.Kind + " " + e.Worker + " " + e.Detail
		if e.Attempt > 0 {
			out[i] += " #" + string(rune('0'+e.Attempt))
		}
	}
	return out
}

// TestTimeline: the record keeps what happened to the task: each attempt
// with its worker and why it ended (parked for input, lost and taken
// over, finished), each question and answer, a cancel request, the end;
// and the times between, from the store's clock.
func TestTimeline(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		t.Run("input, takeover by another worker, completion", func(t *testing.T) {
			e := newEnvOpts(t, b, taskstate.Options{LostAfter: 10 * time.Second, Worker: "w1"})
			w2 := taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix, Clock: e.clock.Now,
				LostAfter: 10 * time.Second, Worker: "w2"})
			ref := e.create(t, taskstate.CreateParams{})
			created := e.get(t, ref).CreatedAt
			e.clock.Advance(500 * time.Millisecond) // queued
			a := e.claim(t, ref)
			e.clock.Advance(time.Second)
			if err := e.s.RequestInput(ctx(t), ref, a, map[string]json.RawMessage{"k1": json.RawMessage(`{"method":"elicitation/create","params":{}}`)}); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(2 * time.Second)
			if _, err := e.s.Answer(ctx(t), ref, map[string]json.RawMessage{"k1": json.RawMessage(`{"action":"accept"}`)}); err != nil {
				t.Fatal(err)
			}
			e.claim(t, ref)
			e.clock.Advance(11 * time.Second)
			if taken, _ := e.takeover(t, 3); len(taken) != 1 {
				t.Fatalf("taken back: %+v", taken)
			}
			c, err := w2.Claim(ctx(t), ref, e.get(t, ref).Resumes, taskstate.Share{})
			if err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Second)
			if err := w2.Finish(ctx(t), ref, c.Attempt, outcome(proto.StatusCompleted)); err != nil {
				t.Fatal(err)
			}
			r := e.get(t, ref)
			// A takeover fences the lost attempt off by numbering past it: the next claim is #4.
			want := []string{"started w1  #1", "input_requested  k1", "answered  k1", "started w1  #2",
				"lost   #2", "started w2  #4", "ended  completed"}
			if got := kinds(r.Timeline()); !reflect.DeepEqual(got, want) {
				t.Fatalf("timeline %q, want %q", got, want)
			}
			if at := r.Timeline()[6].At.Sub(created); at != 15500*time.Millisecond {
				t.Errorf("ended %s after creation, want 15.5s", at)
			}
			if q := r.StartedAt.Sub(created); q != 500*time.Millisecond {
				t.Errorf("first claimed %s after creation, want 500ms (the later claims leave it)", q)
			}
			att := timeline.Attempts(r.Timeline())
			ended := make([]string, len(att))
			for i, x := range att {
				ended[i] = x.Worker + " " + x.Ended
			}
			if want := []string{"w1 input_requested", "w1 lost", "w2 completed"}; !reflect.DeepEqual(ended, want) {
				t.Fatalf("attempts %q, want %q", ended, want)
			}
			if d := att[1].EndedAt.Sub(att[1].StartedAt); d != 11*time.Second {
				t.Errorf("the lost attempt ran %s, want 11s", d)
			}
			t.Logf("timeline bytes: %d", len(e.rawWithTimeline(t, ref)["tl"]))
		})
		t.Run("cancel while running", func(t *testing.T) {
			e := newEnvOpts(t, b, taskstate.Options{Worker: "w1"})
			ref := e.create(t, taskstate.CreateParams{})
			a := e.claim(t, ref)
			if err := e.s.RequestCancel(ctx(t), ref); err != nil {
				t.Fatal(err)
			}
			if err := e.s.Finish(ctx(t), ref, a, outcome(proto.StatusCancelled)); err != nil {
				t.Fatal(err)
			}
			want := []string{"started w1  #1", "cancel_requested  ", "ended  cancelled"}
			if got := kinds(e.get(t, ref).Timeline()); !reflect.DeepEqual(got, want) {
				t.Fatalf("timeline %q, want %q", got, want)
			}
		})
		t.Run("cancelled before any worker claimed it", func(t *testing.T) {
			e := newEnv(t, b)
			ref := e.create(t, taskstate.CreateParams{})
			if err := e.s.RequestCancel(ctx(t), ref); err != nil && err != taskstate.ErrCancelled {
				t.Fatal(err)
			}
			if got := kinds(e.get(t, ref).Timeline()); !reflect.DeepEqual(got, []string{"ended  cancelled"}) {
				t.Fatalf("timeline %q", got)
			}
		})
	})
}
