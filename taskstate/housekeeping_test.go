package taskstate_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// TestStrandedTasksPastManyHeld: a stranded task is found behind more held
// (running) tasks than one page of the live index holds.
func TestStrandedTasksPastManyHeld(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		for range 150 {
			rec, err := e.s.Create(ctx(t), taskstate.CreateParams{Principal: principal, Tool: "echo"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.s.Claim(ctx(t), rec.Ref, 0, taskstate.Share{}); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Millisecond)
		}
		lost, err := e.s.Create(ctx(t), taskstate.CreateParams{Principal: principal, Tool: "echo"})
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		fresh, err := e.s.Create(ctx(t), taskstate.CreateParams{Principal: principal, Tool: "echo"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.s.StrandedTasks(ctx(t), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Ref != lost.Ref || got[0].Tool != "echo" || got[0].Seq != 0 {
			t.Fatalf("StrandedTasks = %+v, want only %s (not the held ones, not the fresh %s)", got, lost.Ref.ID, fresh.Ref.ID)
		}
	})
}

// TestReapDrainsBacklog: one pass reaps every expired task, not one page.
func TestReapDrainsBacklog(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		ttl := int64(1000)
		for range 250 {
			if _, err := e.s.Create(ctx(t), taskstate.CreateParams{Principal: principal, Tool: "echo", TTLMs: &ttl}); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.Advance(2 * time.Second)
		if n, err := e.s.Reap(ctx(t), nil); err != nil || n != 250 {
			t.Fatalf("Reap = %d, %v; want all 250 expired tasks in one pass", n, err)
		}
		if n, err := e.s.Reap(ctx(t), nil); err != nil || n != 0 {
			t.Fatalf("second Reap = %d, %v; want 0", n, err)
		}
	})
}

// TestReapNamesEndedTasks: Reap names each task it reaps (for
// what lives outside Redis, like stored results), and no task that lives on.
func TestReapNamesEndedTasks(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		short, long := int64(1000), int64(60_000)
		want := map[taskstate.Ref]bool{}
		for i := range 4 {
			ttl := &short
			if i%2 == 1 {
				ttl = &long
			}
			rec, err := e.s.Create(ctx(t), taskstate.CreateParams{Principal: principal, Tool: "echo", TTLMs: ttl})
			if err != nil {
				t.Fatal(err)
			}
			if ttl == &short {
				want[rec.Ref] = true
			}
		}
		e.clock.Advance(2 * time.Second)
		got := map[taskstate.Ref]bool{}
		n, err := e.s.Reap(ctx(t), func(r taskstate.Ref) { got[r] = true })
		if err != nil || n != 2 || len(got) != 2 {
			t.Fatalf("Reap = %d, %v, named %v; want the 2 expired tasks", n, err, got)
		}
		for r := range want {
			if !got[r] {
				t.Errorf("expired task %s not named", r.ID)
			}
		}
	})
}

// TestEndedTaskDropsRunState: an ended task keeps its result and loses
// what only a run needs (arguments, client capabilities, checkpoint, the
// holding delivery and its heartbeat).
func TestEndedTaskDropsRunState(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		ref := e.create(t, taskstate.CreateParams{Arguments: json.RawMessage(`{"big":"` + strings.Repeat("x", 500) + `"}`),
			Capabilities: json.RawMessage(`{"elicitation":{}}`)})
		c, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.SaveCheckpoint(ctx(t), ref, c.Attempt, json.RawMessage(`{"step":1}`)); err != nil {
			t.Fatal(err)
		}
		if err := e.s.Finish(ctx(t), ref, c.Attempt, outcome(proto.StatusCompleted)); err != nil {
			t.Fatal(err)
		}
		raw := e.raw(t, ref)
		for _, f := range []string{"arguments", "caps", "checkpoint", "running", "heartbeat"} {
			if _, ok := raw[f]; ok {
				t.Errorf("ended record still holds %s", f)
			}
		}
		if r := e.get(t, ref); r.Status != proto.StatusCompleted || len(r.Result) == 0 {
			t.Fatalf("ended record %+v lost its outcome", r)
		}
	})
}
