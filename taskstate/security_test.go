package taskstate_test

// Limits in the store: the cap on live tasks, on both backends (API keys
// and the request bucket are internal/access's).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

func TestLiveCap(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, fresh(b))
		c := ctx(t)
		mk := func(p string, maxLive int, ttlMs *int64) (taskstate.Ref, error) {
			t.Helper()
			e.clock.Advance(time.Millisecond)
			id := taskstate.NewID()
			rec, err := e.s.Create(c, taskstate.CreateParams{ID: id, Principal: p, Tool: "echo", MaxLive: maxLive, TTLMs: ttlMs})
			if err != nil {
				return taskstate.Ref{Owner: taskstate.OwnerTag(p), ID: id}, err
			}
			return rec.Ref, nil
		}
		must := func(ref taskstate.Ref, err error) taskstate.Ref {
			t.Helper()
			if err != nil {
				t.Fatalf("Create under the cap: %v", err)
			}
			return ref
		}
		refused := func(what string) {
			t.Helper()
			ref, err := mk(principal, 2, nil)
			if !errors.Is(err, taskstate.ErrLimit) {
				t.Fatalf("%s: Create at the cap: %v, want ErrLimit", what, err)
			}
			if e.exists(t, ref) {
				t.Fatalf("%s: a refused Create wrote its record", what)
			}
			if n := e.b.Client.ZScore(c, e.s.Keys().Tasks(ref.Owner), ref.ID).Err(); n == nil {
				t.Fatalf("%s: a refused Create indexed its task", what)
			}
		}
		a := must(mk(principal, 2, nil))
		bRef := must(mk(principal, 2, nil))
		refused("two live")
		// Another principal is not held back; no cap is no cap.
		must(mk("bob", 2, nil))
		must(mk(principal, 0, nil))
		refused("three live, the third uncapped")

		// Finish frees a slot (three live: a, bRef and the uncapped one).
		if err := e.s.Finish(c, a, e.claim(t, a), outcome(proto.StatusCompleted)); err != nil {
			t.Fatal(err)
		}
		must(mk(principal, 3, nil)) // a cap of 3 has room again: a, bRef, the uncapped one, this
		refused("after finish and a new task")
		// RequestCancel of a task no worker holds ends it at once and frees a slot.
		if err := e.s.RequestCancel(c, bRef); err != nil {
			t.Fatal(err)
		}
		if err := e.s.RequestCancel(c, bRef); err != nil { // idempotent: frees nothing more
			t.Fatal(err)
		}
		// The live index holds each live task and 'total' (Keys.Live).
		if live := e.b.Client.HLen(c, e.s.Keys().Live(taskstate.OwnerTag(principal))).Val() - 1; live != 2 {
			t.Fatalf("live after cancel: %d, want 2", live)
		}
		must(mk(principal, 3, nil))
		// A running task's cancel is only a request: the slot frees when it ends.
		e2, err := e.s.Create(c, taskstate.CreateParams{Principal: "erin", Tool: "echo", MaxLive: 1})
		if err != nil {
			t.Fatal(err)
		}
		att := e.claim(t, e2.Ref)
		if err := e.s.RequestCancel(c, e2.Ref); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.Create(c, taskstate.CreateParams{Principal: "erin", Tool: "echo", MaxLive: 1}); !errors.Is(err, taskstate.ErrLimit) {
			t.Errorf("cancel requested, still running: %v, want ErrLimit", err)
		}
		if err := e.s.Finish(c, e2.Ref, att, outcome(proto.StatusCancelled)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.Create(c, taskstate.CreateParams{Principal: "erin", Tool: "echo", MaxLive: 1}); err != nil {
			t.Errorf("after the worker stopped: %v", err)
		}

		// Reap frees the slot of an expired task.
		f1 := must(mk("frank", 1, ttl(1000)))
		if _, err := mk("frank", 1, nil); !errors.Is(err, taskstate.ErrLimit) {
			t.Fatalf("frank at the cap: %v", err)
		}
		e.clock.Advance(2 * time.Second)
		if n, err := e.s.Reap(c, nil); err != nil || n < 1 {
			t.Fatalf("Reap: %d %v", n, err)
		}
		if e.exists(t, f1) {
			t.Errorf("reaped record still there")
		}
		must(mk("frank", 1, nil))
	})
}

// TestLiveCapConcurrent: creates racing at the cap never pass it.
func TestLiveCapConcurrent(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, fresh(b))
		const n, maxLive = 20, 5
		errs := make(chan error, n)
		for range n {
			go func() {
				_, err := e.s.Create(context.Background(), taskstate.CreateParams{Principal: principal, Tool: "echo", MaxLive: maxLive})
				errs <- err
			}()
		}
		ok := 0
		for range n {
			switch err := <-errs; {
			case err == nil:
				ok++
			case !errors.Is(err, taskstate.ErrLimit):
				t.Errorf("Create: %v", err)
			}
		}
		if ok != maxLive {
			t.Errorf("%d creates passed a cap of %d", ok, maxLive)
		}
	})
}
