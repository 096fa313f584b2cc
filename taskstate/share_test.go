package taskstate_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// TestShare: a principal's share of a queue caps its running tasks there,
// atomically at claim. A task over the share is not claimed but gets a
// new job number (no retry spent, nothing lost); ending, parking, a
// takeover and a killed worker's silence each free a slot; other
// principals and other queues are not counted.
func TestShare(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		const lost = 10 * time.Second
		e := newEnvOpts(t, fresh(b), taskstate.Options{LostAfter: lost})
		c := ctx(t)
		cpu := taskstate.Share{Queue: "cpu", Max: 2}
		claim := func(ref taskstate.Ref, share taskstate.Share) (*taskstate.Claim, error) {
			t.Helper()
			e.clock.Advance(time.Millisecond)
			return e.s.Claim(c, ref, e.get(t, ref).Resumes, share)
		}
		mustClaim := func(what string, ref taskstate.Ref, share taskstate.Share) int64 {
			t.Helper()
			cl, err := claim(ref, share)
			if err != nil {
				t.Fatalf("%s: Claim: %v", what, err)
			}
			return cl.Attempt
		}
		mustBusy := func(what string, ref taskstate.Ref, share taskstate.Share, running int64) {
			t.Helper()
			before := e.get(t, ref)
			_, err := claim(ref, share)
			var busy *taskstate.BusyError
			if !errors.As(err, &busy) || !errors.Is(err, taskstate.ErrBusy) {
				t.Fatalf("%s: Claim = %v, want a BusyError", what, err)
			}
			if busy.Seq != before.Resumes+1 || busy.Running != running {
				t.Errorf("%s: %+v, want job %d and %d running", what, busy, before.Resumes+1, running)
			}
			rec := e.get(t, ref)
			if rec.Status != proto.StatusWorking || rec.Running != 0 || rec.Attempt != before.Attempt || rec.Resumes != busy.Seq {
				t.Errorf("%s: record %s running %d attempt %d resumes %d; want working, not held, attempt %d, resumes %d",
					what, rec.Status, rec.Running, rec.Attempt, rec.Resumes, before.Attempt, busy.Seq)
			}
			// The job just refused is done with: it never claims.
			if _, err := e.s.Claim(c, ref, busy.Seq-1, share); !errors.Is(err, taskstate.ErrStale) {
				t.Errorf("%s: the refused job claims again: %v", what, err)
			}
		}
		counted := func(owner, queue string) int64 {
			t.Helper()
			return e.b.Client.ZCard(c, e.s.Keys().Running(owner, queue)).Val()
		}
		alice := taskstate.OwnerTag(principal)
		mk := func(p string) taskstate.Ref { return e.create(t, taskstate.CreateParams{Principal: p}) }

		a1, a2, a3 := mk(principal), mk(principal), mk(principal)
		mustClaim("a1", a1, cpu)
		a2Attempt := mustClaim("a2", a2, cpu)
		mustBusy("a3 over the share", a3, cpu, 2)
		if msg := e.get(t, a3).StatusMessage; msg != "Queued: this principal already runs 2 tasks on queue cpu" {
			t.Errorf("a3 statusMessage %q", msg)
		}
		mustBusy("a3 again", a3, cpu, 2)
		mustClaim("bob has his own share", mk("bob"), cpu)
		mustClaim("another queue", mk(principal), taskstate.Share{Queue: "gpu", Max: 2})
		mustClaim("no share", mk(principal), taskstate.Share{Queue: "cpu"})
		if n := counted(alice, "cpu"); n != 2 {
			t.Fatalf("alice counted %d on cpu, want 2", n)
		}

		// A re-delivery of a counted task is not refused (it holds its slot).
		a1Attempt := mustClaim("a1 re-delivered", a1, cpu)
		// Ending a task frees its slot.
		if err := e.s.Finish(c, a1, a1Attempt, outcome(proto.StatusCompleted)); err != nil {
			t.Fatal(err)
		}
		mustClaim("a3 after a1 ended", a3, cpu)
		// Parking a task for input frees its slot; its resume is counted again.
		a4 := mk(principal)
		mustBusy("a4 while full", a4, cpu, 2)
		if err := e.s.RequestInput(c, a2, a2Attempt, map[string]json.RawMessage{"k": json.RawMessage(`{"method":"elicitation/create"}`)}); err != nil {
			t.Fatal(err)
		}
		if n := counted(alice, "cpu"); n != 1 {
			t.Errorf("after parking a2 alice counted %d on cpu, want 1", n)
		}
		mustClaim("a4 after a2 parked", a4, cpu)
		if _, err := e.s.Answer(c, a2, map[string]json.RawMessage{"k": json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		mustBusy("a2 resumed while full", a2, cpu, 2)

		// Heartbeats keep a running task counted past lost-after.
		e.clock.Advance(lost / 2)
		for _, ref := range []taskstate.Ref{a3, a4} {
			if err := e.s.Heartbeat(c, ref, e.get(t, ref).Attempt); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.Advance(lost/2 + time.Millisecond)
		mustBusy("a2 while a3 and a4 beat", a2, cpu, 2)
		// Without heartbeats (their worker was killed) they stop counting.
		e.clock.Advance(lost)
		mustClaim("a2 once a3 and a4 went silent", a2, cpu)
		// The takeover scan frees the slots of the deliveries it takes back.
		taken, _, err := e.s.TakeOver(c, 3, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(taken) < 2 {
			t.Fatalf("takeover took back %d tasks, want a3 and a4 at least", len(taken))
		}
		if n := counted(alice, "cpu"); n != 1 {
			t.Errorf("after the takeover alice counted %d on cpu, want 1 (a2)", n)
		}
		// Expiry, cancel and reap end a task through the same helper (ended).
		if err := e.s.Finish(c, a2, e.get(t, a2).Attempt, outcome(proto.StatusFailed)); err != nil {
			t.Fatal(err)
		}
		if n := counted(alice, "cpu"); n != 0 {
			t.Errorf("after every task ended alice counted %d on cpu", n)
		}
		if _, ok := e.raw(t, a2)["slot"]; ok {
			t.Errorf("an ended task keeps its slot field")
		}
	})
}

// TestShareConcurrentClaims: claims racing for a share of 3 let exactly 3 run.
func TestShareConcurrentClaims(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, fresh(b))
		c := ctx(t)
		refs := make([]taskstate.Ref, 12)
		for i := range refs {
			refs[i] = e.create(t, taskstate.CreateParams{})
		}
		var wg sync.WaitGroup
		errs := make([]error, len(refs))
		for i, ref := range refs {
			wg.Go(func() { _, errs[i] = e.s.Claim(c, ref, 0, taskstate.Share{Queue: "q", Max: 3}) })
		}
		wg.Wait()
		ran, busy := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ran++
			case errors.Is(err, taskstate.ErrBusy):
				busy++
			default:
				t.Errorf("Claim: %v", err)
			}
		}
		if ran != 3 || busy != len(refs)-3 {
			t.Errorf("%d claimed, %d busy; want 3 and %d", ran, busy, len(refs)-3)
		}
	})
}
