package taskstate_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// takeover runs one takeover scan that may take lost deliveries back.
func (e *env) takeover(t *testing.T, maxLost int) ([]taskstate.TakenBack, taskstate.TakeoverStats) {
	t.Helper()
	taken, stats, err := e.s.TakeOver(ctx(t), maxLost, true)
	if err != nil {
		t.Fatalf("TakeOver: %v", err)
	}
	return taken, stats
}

// TestTakeover: mcpq, not asynq's lease, decides when a delivery is lost.
// A silent delivery is taken back after LostAfter under a new job number,
// the old attempt is fenced off at once, a late delivery of the old job
// claims nothing, and after MaxLost lost deliveries the task fails with a
// message that says why.
func TestTakeover(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		t.Run("a live delivery is left alone", func(t *testing.T) {
			e := newEnvOpts(t, b, taskstate.Options{LostAfter: 10 * time.Second})
			ref := e.create(t, taskstate.CreateParams{})
			a := e.claim(t, ref)
			for range 3 { // heartbeats keep it alive well past LostAfter
				e.clock.Advance(6 * time.Second)
				if err := e.s.Heartbeat(ctx(t), ref, a); err != nil {
					t.Fatal(err)
				}
				if taken, _ := e.takeover(t, 3); len(taken) != 0 {
					t.Fatalf("took back a live delivery: %+v", taken)
				}
			}
			if r := e.get(t, ref); r.Running != a || r.Lost != 0 {
				t.Fatalf("record changed: running %d lost %d", r.Running, r.Lost)
			}
		})
		t.Run("a silent delivery is taken back once", func(t *testing.T) {
			e := newEnvOpts(t, b, taskstate.Options{LostAfter: 10 * time.Second})
			ref := e.create(t, taskstate.CreateParams{})
			a := e.claim(t, ref)
			e.clock.Advance(9 * time.Second)
			if taken, _ := e.takeover(t, 3); len(taken) != 0 {
				t.Fatalf("taken back before LostAfter: %+v", taken)
			}
			w := e.watch(t, ref)
			e.clock.Advance(2 * time.Second)
			taken, _ := e.takeover(t, 3)
			if len(taken) != 1 || taken[0].Ref != ref || taken[0].Seq != 1 || taken[0].Lost != 1 || taken[0].Tool != "echo" {
				t.Fatalf("taken back: %+v", taken)
			}
			w.expect(t, "working") // listeners hear of it
			r := e.get(t, ref)
			if r.Status != proto.StatusWorking || r.Running != 0 || !strings.Contains(r.StatusMessage, "worker was lost") {
				t.Fatalf("after takeover: %+v", r)
			}
			if again, _ := e.takeover(t, 3); len(again) != 0 {
				t.Fatalf("taken back twice: %+v", again)
			}
			// The old attempt is fenced off before any new delivery claims.
			for name, op := range map[string]func() error{
				"Heartbeat": func() error { return e.s.Heartbeat(ctx(t), ref, a) },
				"Progress":  func() error { return e.s.Progress(ctx(t), ref, a, "stale") },
				"Finish":    func() error { return e.s.Finish(ctx(t), ref, a, outcome(proto.StatusCompleted)) },
			} {
				if err := op(); !errors.Is(err, taskstate.ErrStale) {
					t.Errorf("%s from the lost attempt: %v, want ErrStale", name, err)
				}
			}
			// A late delivery of the old job (asynq's own lease recovery) claims nothing.
			e.unchanged(t, ref, func() error { _, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{}); return err }, taskstate.ErrStale)
			c, err := e.s.Claim(ctx(t), ref, 1, taskstate.Share{})
			if err != nil || c.Attempt <= a {
				t.Fatalf("new job's claim: %+v %v", c, err)
			}
			if err := e.s.Finish(ctx(t), ref, c.Attempt, outcome(proto.StatusCompleted)); err != nil {
				t.Fatal(err)
			}
			if taken, _ := e.takeover(t, 3); len(taken) != 0 {
				t.Fatalf("an ended task taken back: %+v", taken)
			}
		})
		t.Run("after MaxLost lost deliveries the task fails", func(t *testing.T) {
			e := newEnvOpts(t, b, taskstate.Options{LostAfter: time.Second})
			ref := e.create(t, taskstate.CreateParams{})
			for seq := int64(0); seq <= 2; seq++ {
				if _, err := e.s.Claim(ctx(t), ref, seq, taskstate.Share{}); err != nil {
					t.Fatalf("claim job %d: %v", seq, err)
				}
				e.clock.Advance(2 * time.Second)
				taken, stats := e.takeover(t, 2)
				if seq < 2 && (len(taken) != 1 || taken[0].Seq != seq+1) {
					t.Fatalf("lost delivery %d: taken %+v", seq+1, taken)
				}
				if seq == 2 && (len(taken) != 0 || stats.Failed != 1) {
					t.Fatalf("third lost delivery: taken %+v stats %+v", taken, stats)
				}
			}
			r := e.get(t, ref)
			if r.Status != proto.StatusFailed || r.Error == nil || r.Error.Code != proto.CodeInternalError ||
				!strings.Contains(r.Error.Message, "worker was lost 3 times") || r.StatusMessage == "" {
				t.Fatalf("after the last lost delivery: %+v (error %+v)", r, r.Error)
			}
			if e.b.Client.HExists(ctx(t), e.s.Keys().Live(ref.Owner), ref.ID).Val() {
				t.Error("failed task still in the live index")
			}
			if err := e.b.Client.ZScore(ctx(t), e.s.Keys().Held(ref.Owner), ref.ID).Err(); err == nil {
				t.Error("failed task still in the held index")
			}
		})
		t.Run("after an outage only cancels are acted on", func(t *testing.T) {
			e := newEnvOpts(t, b, taskstate.Options{LostAfter: time.Second})
			ref := e.create(t, taskstate.CreateParams{})
			e.claim(t, ref)
			e.clock.Advance(2 * time.Second)
			taken, stats, err := e.s.TakeOver(ctx(t), 3, false)
			if err != nil || len(taken) != 0 || stats != (taskstate.TakeoverStats{}) {
				t.Fatalf("TakeOver(takeLost=false): %+v %+v %v", taken, stats, err)
			}
			if taken, _ := e.takeover(t, 3); len(taken) != 1 {
				t.Fatalf("later scan: %+v", taken)
			}
		})
	})
}

// TestCancelIsKept: an acknowledged cancel of a held task ends it
// "cancelled": the worker's outcome is written as cancelled, and when no
// worker ends it within the grace (its worker is gone), the takeover scan
// does.
func TestCancelIsKept(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		t.Run("an outcome after the cancel is written cancelled", func(t *testing.T) {
			for _, st := range []proto.TaskStatus{proto.StatusCompleted, proto.StatusFailed} {
				e := newEnv(t, b)
				ref := e.create(t, taskstate.CreateParams{})
				a := e.claim(t, ref)
				if err := e.s.RequestCancel(ctx(t), ref); err != nil {
					t.Fatal(err)
				}
				w := e.watch(t, ref)
				if err := e.s.Finish(ctx(t), ref, a, outcome(st)); !errors.Is(err, taskstate.ErrCancelled) {
					t.Fatalf("Finish %s after cancel: %v, want ErrCancelled", st, err)
				}
				w.expect(t, "cancelled")
				r := e.get(t, ref)
				if r.Status != proto.StatusCancelled || r.Result != nil || r.Error != nil {
					t.Fatalf("%s after cancel ended %+v", st, r)
				}
			}
		})
		t.Run("a cancel no worker ends is ended by the scan", func(t *testing.T) {
			e := newEnvOpts(t, b, taskstate.Options{LostAfter: time.Minute, CancelGrace: 2 * time.Second})
			ref := e.create(t, taskstate.CreateParams{})
			a := e.claim(t, ref)
			if err := e.s.RequestCancel(ctx(t), ref); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Second)
			if _, stats := e.takeover(t, 3); stats.Cancelled != 0 {
				t.Fatal("cancel forced within its grace")
			}
			e.clock.Advance(1500 * time.Millisecond)
			w := e.watch(t, ref)
			// Cancels are ended even by a scan that takes no lost delivery.
			if _, stats, err := e.s.TakeOver(ctx(t), 3, false); err != nil || stats.Cancelled != 1 {
				t.Fatalf("scan after the grace: %+v %v", stats, err)
			}
			w.expect(t, "cancelled")
			if r := e.get(t, ref); r.Status != proto.StatusCancelled {
				t.Fatalf("ended %s", r.Status)
			}
			if err := e.s.Finish(ctx(t), ref, a, outcome(proto.StatusCompleted)); !errors.Is(err, taskstate.ErrTerminal) {
				t.Fatalf("the worker's late outcome: %v", err)
			}
		})
	})
}
