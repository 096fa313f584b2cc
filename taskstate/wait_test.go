package taskstate_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// TestWaitReplicasShortfall: with more replicas asked for than exist, the
// acknowledged writes (Create, Answer, RequestCancel) are still made, and
// each reports a *ReplicaError instead of success.
func TestWaitReplicasShortfall(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		const want = 3 // no backend here has a replica
		e := newEnvOpts(t, b, taskstate.Options{WaitReplicas: want, WaitTimeout: 20 * time.Millisecond})
		plain := taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix, Clock: e.clock.Now})
		short := func(t *testing.T, what string, err error) {
			t.Helper()
			var re *taskstate.ReplicaError
			if !errors.As(err, &re) || !errors.Is(err, taskstate.ErrNotReplicated) || re.Want != want || re.Got >= want {
				t.Fatalf("%s: %v, want a *ReplicaError wanting %d", what, err, want)
			}
		}

		t.Run("create", func(t *testing.T) {
			id := taskstate.NewID()
			rec, err := e.s.Create(ctx(t), taskstate.CreateParams{ID: id, Principal: principal, Tool: "echo"})
			short(t, "Create", err)
			if rec == nil || rec.Ref.ID != id {
				t.Fatalf("Create returned no record with its error: %+v", rec)
			}
			ref := taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: id}
			if r, err := plain.Get(ctx(t), ref); err != nil || r.Status != proto.StatusWorking {
				t.Fatalf("the record was not written: %+v %v", r, err)
			}
		})
		t.Run("a refused create reports the refusal", func(t *testing.T) {
			id := taskstate.NewID()
			if _, err := plain.Create(ctx(t), taskstate.CreateParams{ID: id, Principal: principal, Tool: "echo"}); err != nil {
				t.Fatal(err)
			}
			_, err := e.s.Create(ctx(t), taskstate.CreateParams{ID: id, Principal: principal, Tool: "echo"})
			if !errors.Is(err, taskstate.ErrExists) {
				t.Fatalf("Create of a taken id: %v, want ErrExists", err)
			}
		})
		t.Run("update", func(t *testing.T) {
			pe := &env{b: b, s: plain, clock: e.clock}
			ref, _ := pe.parked(t, taskstate.CreateParams{}, "a")
			res, err := e.s.Answer(ctx(t), ref, raws("a", acceptA))
			short(t, "Answer", err)
			if res.Applied != 1 || res.Resume != 1 {
				t.Fatalf("Answer result %+v: the caller needs Resume to enqueue the job", res)
			}
			if r := pe.get(t, ref); r.Status != proto.StatusWorking || string(r.Answers["a"]) != acceptA {
				t.Fatalf("the answer was not written: %s %s", r.Status, r.Answers)
			}
		})
		t.Run("cancel", func(t *testing.T) {
			pe := &env{b: b, s: plain, clock: e.clock}
			ref := pe.create(t, taskstate.CreateParams{})
			short(t, "RequestCancel", e.s.RequestCancel(ctx(t), ref))
			if r := pe.get(t, ref); r.Status != proto.StatusCancelled {
				t.Fatalf("status %s after the cancel, want cancelled", r.Status)
			}
			// Already cancelled: nothing to write, no error.
			if err := e.s.RequestCancel(ctx(t), ref); err != nil {
				t.Fatalf("repeated cancel: %v", err)
			}
		})
		t.Run("create with a pipelined job", func(t *testing.T) {
			ref := taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: taskstate.NewID()}
			job := &fakeJob{record: e.s.Keys().Task(ref)}
			_, err := e.s.Create(ctx(t), taskstate.CreateParams{ID: ref.ID, Principal: principal, Tool: "echo", Job: job})
			short(t, "Create with a job", err)
			if job.exists == nil || job.outcome() != nil {
				t.Fatal("the job was not sent after the record")
			}
			if r, err := plain.Get(ctx(t), ref); err != nil || r.Status != proto.StatusWorking {
				t.Fatalf("the record was not written: %+v %v", r, err)
			}
		})
	})
}

// TestWaitReplicasConfirmed runs on a real primary with one replica: asking
// for one replica succeeds and the replica holds the write when the call
// returns; asking for two reports that one confirmed.
func TestWaitReplicasConfirmed(t *testing.T) {
	t.Parallel()
	primary, replicas := redistest.StartReplicated(t, 1)
	b := &redistest.Backend{Name: "replicated", Client: primary.Client(t), Prefix: "w:"}
	replica := replicas[0].Client(t)
	e := newEnvOpts(t, b, taskstate.Options{WaitReplicas: 1, WaitTimeout: wait})
	onReplica := func(t *testing.T, ref taskstate.Ref, field, want string) {
		t.Helper()
		// WAIT returned, so the replica has applied the write: read once.
		got, err := replica.HGet(ctx(t), e.s.Keys().Task(ref), field).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("replica holds %s=%q, want %q", field, got, want)
		}
	}

	rec, err := e.s.Create(ctx(t), taskstate.CreateParams{Principal: principal, Tool: "echo"})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	onReplica(t, rec.Ref, "status", "working")
	ref, _ := e.parked(t, taskstate.CreateParams{}, "a")
	if res, err := e.s.Answer(ctx(t), ref, raws("a", acceptA)); err != nil || res.Resume != 1 {
		t.Fatalf("Answer: %+v %v", res, err)
	}
	onReplica(t, ref, "status", "working")
	if err := e.s.RequestCancel(ctx(t), rec.Ref); err != nil {
		t.Fatalf("RequestCancel: %v", err)
	}
	onReplica(t, rec.Ref, "status", "cancelled")

	two := taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix, WaitReplicas: 2, WaitTimeout: 50 * time.Millisecond})
	_, err = two.Create(ctx(t), taskstate.CreateParams{Principal: principal, Tool: "echo"})
	var re *taskstate.ReplicaError
	if !errors.As(err, &re) || re.Want != 2 || re.Got != 1 {
		t.Fatalf("Create wanting 2 replicas of 1: %v", err)
	}
}
