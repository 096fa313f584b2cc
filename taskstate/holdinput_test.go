package taskstate_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// held creates and claims a task whose delivery asks for keys and waits
// with it (HoldInput).
func (e *env) held(t *testing.T, keys ...string) (taskstate.Ref, int64) {
	t.Helper()
	ref := e.create(t, taskstate.CreateParams{})
	a := e.claim(t, ref)
	reqs := map[string]json.RawMessage{}
	for _, k := range keys {
		reqs[k] = json.RawMessage(elicitReq)
	}
	if err := e.s.HoldInput(ctx(t), ref, a, reqs); err != nil {
		t.Fatalf("HoldInput: %v", err)
	}
	return ref, a
}

// TestHoldInput: a delivery that waits for input with its task keeps it:
// the task shows input_required with the requests, the answer sets it
// working again without a new job, the same attempt heartbeats and
// finishes; a cancel is the delivery's to end; a lost delivery's
// requests are dropped when the task is taken back.
func TestHoldInput(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		t.Run("answered: working again, same attempt, no job", func(t *testing.T) {
			e := newEnv(t, b)
			ref, a := e.held(t, "q1")
			r := e.get(t, ref)
			if r.Status != proto.StatusInputRequired || r.InputRequests["q1"] == nil || r.Running != a {
				t.Fatalf("while held: %s %v running %d", r.Status, r.InputRequests, r.Running)
			}
			if err := e.s.Heartbeat(ctx(t), ref, a); err != nil {
				t.Fatalf("heartbeat while waiting: %v", err)
			}
			res, err := e.s.Answer(ctx(t), ref, raws("q1", acceptA))
			if err != nil || res.Applied != 1 || res.Resume != 0 {
				t.Fatalf("answer: %+v %v (want applied 1, no resume)", res, err)
			}
			r = e.get(t, ref)
			if r.Status != proto.StatusWorking || r.Running != a || string(r.Answers["q1"]) != acceptA {
				t.Fatalf("after the answer: %s running %d answers %s", r.Status, r.Running, r.Answers)
			}
			if err := e.s.Finish(ctx(t), ref, a, outcome(proto.StatusCompleted)); err != nil {
				t.Fatalf("finish by the waiting attempt: %v", err)
			}
		})
		t.Run("a cancel is flagged for the waiting delivery", func(t *testing.T) {
			e := newEnv(t, b)
			ref, a := e.held(t, "q1")
			if err := e.s.RequestCancel(ctx(t), ref); err != nil {
				t.Fatalf("cancel: %v", err)
			}
			if r := e.get(t, ref); r.Status != proto.StatusInputRequired {
				t.Fatalf("cancel of a held task ended it at once: %s", r.Status)
			}
			if err := e.s.Heartbeat(ctx(t), ref, a); !errors.Is(err, taskstate.ErrCancelled) {
				t.Fatalf("heartbeat after the cancel: %v, want ErrCancelled", err)
			}
			if err := e.s.Finish(ctx(t), ref, a, outcome(proto.StatusCancelled)); err != nil {
				t.Fatalf("finish cancelled: %v", err)
			}
			if r := e.get(t, ref); r.Status != proto.StatusCancelled {
				t.Fatalf("ended %s", r.Status)
			}
		})
		t.Run("a lost waiting delivery is taken back and its requests dropped", func(t *testing.T) {
			e := newEnvOpts(t, b, taskstate.Options{LostAfter: 10 * time.Second})
			ref, a := e.held(t, "q1")
			e.clock.Advance(11 * time.Second)
			taken, _ := e.takeover(t, 3)
			if len(taken) != 1 || taken[0].Ref != ref {
				t.Fatalf("taken back: %+v", taken)
			}
			r := e.get(t, ref)
			if r.Status != proto.StatusWorking || r.Running != 0 || len(r.InputRequests) != 0 {
				t.Fatalf("after takeover: %s running %d requests %v", r.Status, r.Running, r.InputRequests)
			}
			if res, err := e.s.Answer(ctx(t), ref, raws("q1", acceptA)); err != nil || res.Applied != 0 {
				t.Fatalf("a late answer to the dropped request: %+v %v", res, err)
			}
			if err := e.s.Heartbeat(ctx(t), ref, a); !errors.Is(err, taskstate.ErrStale) {
				t.Fatalf("the lost attempt's heartbeat: %v, want ErrStale", err)
			}
			next := e.claim(t, ref)
			err := e.s.HoldInput(ctx(t), ref, next, raws("q1", elicitReq))
			if !errors.Is(err, taskstate.ErrKeyReused) {
				t.Fatalf("the dropped key asked again: %v, want ErrKeyReused", err)
			}
		})
	})
}
