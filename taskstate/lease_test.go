package taskstate_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
)

// TestWorkerLease: the liveness of a task's worker, not the age of the
// task's heartbeat, decides a takeover. A task whose heartbeat is old
// (it did not get through an outage) stays with a worker that renewed
// its lease; once that lease is LostAfter old too, the task is taken back.
// A second delivery of the job on another worker claims nothing while the
// holder lives, and a released hold is claimed at once.
func TestWorkerLease(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		opts := taskstate.Options{LostAfter: 10 * time.Second, Worker: "host:1:a"}
		a := newEnvOpts(t, b, opts)
		opts.Worker = "host:2:b"
		other := &env{b: b, clock: a.clock}
		opts.Prefix, opts.Clock = b.Prefix, a.clock.Now
		other.s = taskstate.New(b.Client, opts)

		t.Run("a live worker keeps a task with an old heartbeat", func(t *testing.T) {
			ref := a.create(t, taskstate.CreateParams{})
			attempt := a.claim(t, ref)
			if err := a.s.Catalog().Lease(ctx(t), a.s.Worker()); err != nil {
				t.Fatal(err)
			}
			for range 4 { // 32 s without a task heartbeat, the lease renewed
				a.clock.Advance(8 * time.Second)
				if err := a.s.Catalog().Lease(ctx(t), a.s.Worker()); err != nil {
					t.Fatal(err)
				}
				if taken, _ := other.takeover(t, 3); len(taken) != 0 {
					t.Fatalf("took a task from a live worker: %+v", taken)
				}
			}
			if _, err := other.s.Claim(ctx(t), ref, 0, taskstate.Share{}); !errors.Is(err, taskstate.ErrHeld) {
				t.Fatalf("second delivery on another worker: %v, want ErrHeld", err)
			}
			if r := a.get(t, ref); r.Running != attempt || r.Lost != 0 {
				t.Fatalf("record changed: running %d lost %d", r.Running, r.Lost)
			}
			if err := a.s.Heartbeat(ctx(t), ref, attempt); err != nil {
				t.Fatalf("the live worker's heartbeat: %v", err)
			}
			// The worker dies: its lease ages, and the task is taken back.
			a.clock.Advance(9 * time.Second)
			if taken, _ := other.takeover(t, 3); len(taken) != 0 {
				t.Fatalf("taken before the lease was LostAfter old: %+v", taken)
			}
			a.clock.Advance(2 * time.Second)
			taken, _ := other.takeover(t, 3)
			if len(taken) != 1 || taken[0].Ref != ref || taken[0].Seq != 1 {
				t.Fatalf("after the lease aged: %+v", taken)
			}
			if err := a.s.Heartbeat(ctx(t), ref, attempt); !errors.Is(err, taskstate.ErrStale) {
				t.Fatalf("the old attempt after the takeover: %v, want ErrStale", err)
			}
		})
		t.Run("a dropped lease frees the tasks at their heartbeat", func(t *testing.T) {
			ref := a.create(t, taskstate.CreateParams{})
			a.claim(t, ref)
			if err := a.s.Catalog().Lease(ctx(t), a.s.Worker()); err != nil {
				t.Fatal(err)
			}
			if err := a.s.Catalog().Unlease(ctx(t), a.s.Worker()); err != nil {
				t.Fatal(err)
			}
			a.clock.Advance(11 * time.Second)
			if taken, _ := other.takeover(t, 3); len(taken) != 1 {
				t.Fatalf("taken: %+v, want the task", taken)
			}
		})
		t.Run("a released hold is claimed at once", func(t *testing.T) {
			ref := a.create(t, taskstate.CreateParams{})
			attempt := a.claim(t, ref)
			if err := a.s.Catalog().Lease(ctx(t), a.s.Worker()); err != nil {
				t.Fatal(err)
			}
			if err := other.s.Release(ctx(t), ref, attempt+1); !errors.Is(err, taskstate.ErrStale) {
				t.Fatalf("release by another attempt: %v, want ErrStale", err)
			}
			if err := a.s.Release(ctx(t), ref, attempt); err != nil {
				t.Fatal(err)
			}
			c, err := other.s.Claim(ctx(t), ref, 0, taskstate.Share{})
			if err != nil || c.Attempt != attempt+1 {
				t.Fatalf("claim after release: %+v %v", c, err)
			}
		})
	})
}
