package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redisconn"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// captureEnv is a store and a capturing queue client on one counted
// connection pool, as a front end has them.
type captureEnv struct {
	b       *redistest.Backend
	s       *taskstate.Store
	rt      *redistest.RoundTrips
	client  *queue.Client
	inspect *asynq.Inspector
	queue   string
}

func newCaptureEnv(t *testing.T, b *redistest.Backend) *captureEnv {
	t.Helper()
	rdb, err := redisconn.Connect(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	rt := &redistest.RoundTrips{}
	rdb.AddHook(rt)
	return &captureEnv{b: b, s: taskstate.New(rdb, taskstate.Options{Prefix: b.Prefix}), rt: rt,
		client:  queue.NewClient(rdb, queue.Options{Prefix: b.Prefix, Capture: true}),
		inspect: asynq.NewInspectorFromRedisClient(b.Client), queue: queue.Keys{Prefix: b.Prefix}.Queue("default")}
}

// ctx is a context bounded by the test's life.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

const principal = "alice@example.com"

// capture records the enqueue of the first job of ref into a taskstate.Job.
func (e *captureEnv) capture(t *testing.T, ref taskstate.Ref) taskstate.Job {
	t.Helper()
	j, err := e.client.Capture(ctx(t), queue.Job{Ref: ref, Tool: "echo", Queue: "default"})
	if err != nil {
		t.Fatalf("captured enqueue: %v", err)
	}
	if j == nil {
		t.Fatal("asynq's enqueue was not captured: it went to Redis before the record")
	}
	return j
}

// newRef is a fresh task of the test principal.
func newRef() taskstate.Ref {
	return taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: taskstate.NewID()}
}

// create writes ref's record with its job captured first, under a cap of
// maxLive live tasks (0: none).
func (e *captureEnv) create(t *testing.T, ref taskstate.Ref, maxLive int) (*taskstate.Record, error) {
	t.Helper()
	return e.s.Create(ctx(t), taskstate.CreateParams{ID: ref.ID, Principal: principal, Tool: "echo",
		MaxLive: maxLive, Job: e.capture(t, ref)})
}

// get reads ref's record.
func (e *captureEnv) get(t *testing.T, ref taskstate.Ref) *taskstate.Record {
	t.Helper()
	r, err := e.s.Get(ctx(t), ref)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return r
}

// queued reports whether the job with id is in the queue.
func (e *captureEnv) queued(t *testing.T, id string) bool {
	t.Helper()
	_, err := e.inspect.GetTaskInfo(e.queue, id)
	switch {
	case err == nil:
		return true
	case errors.Is(err, asynq.ErrTaskNotFound), errors.Is(err, asynq.ErrQueueNotFound):
		return false
	}
	t.Fatalf("GetTaskInfo: %v", err)
	return false
}

func TestCreateSendsRecordAndJobInOneRoundTrip(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newCaptureEnv(t, b)
		// The first capture learns asynq's script source (a NOSCRIPT and an
		// EVAL, both answered locally) and publishes the queue name once.
		if _, err := e.create(t, newRef(), 0); err != nil {
			t.Fatalf("Create: %v", err)
		}

		ref := newRef()
		job := e.capture(t, ref)
		if e.queued(t, ref.ID) {
			t.Fatal("a captured enqueue reached Redis before Create")
		}
		single, pipes := e.rt.Single.Load(), e.rt.Pipelines.Load()
		rec, err := e.s.Create(ctx(t), taskstate.CreateParams{ID: ref.ID, Principal: principal, Tool: "echo", Job: job})
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		wantSingle, wantPipes := int64(0), int64(1)
		if b.Cluster {
			// The record and the job are in different slots (maybe on
			// different nodes): Create sends them one after the other,
			// and the queue's wake-up after the job.
			wantSingle, wantPipes = 3, 0
		}
		if d1, d2 := e.rt.Single.Load()-single, e.rt.Pipelines.Load()-pipes; d1 != wantSingle || d2 != wantPipes {
			t.Fatalf("Create sent %d commands and %d pipelines, want %d and %d", d1, d2, wantSingle, wantPipes)
		}
		if got := e.get(t, rec.Ref); got.Status != "working" || got.Tool != "echo" {
			t.Fatalf("record %+v", got)
		}
		if !e.queued(t, ref.ID) {
			t.Fatal("the job is not queued")
		}
	})
}

func TestCreateWakesTheJobsQueue(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newCaptureEnv(t, b)
		hub := events.NewHub(b.Client)
		defer hub.Close()
		wake, err := hub.Subscribe(ctx(t), queue.Keys{Prefix: b.Prefix}.Wake("default"))
		if err != nil {
			t.Fatal(err)
		}
		defer wake.Close()
		for range 2 { // the first learns asynq's script source
			ref := newRef()
			if _, err := e.create(t, ref, 0); err != nil {
				t.Fatalf("Create: %v", err)
			}
			select {
			case <-wake.C:
			case <-time.After(10 * time.Second):
				t.Fatal("no wake-up on the queue's channel")
			}
			if !e.queued(t, ref.ID) { // a woken worker finds the job
				t.Fatal("woken before the job was queued")
			}
		}
	})
}

func TestWakingClientWakesTheJobsQueue(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newCaptureEnv(t, b)
		enq := queue.NewClient(b.Client, queue.Options{Prefix: b.Prefix})
		hub := events.NewHub(b.Client)
		defer hub.Close()
		wake, err := hub.Subscribe(ctx(t), queue.Keys{Prefix: b.Prefix}.Wake("default"))
		if err != nil {
			t.Fatal(err)
		}
		defer wake.Close()
		for i := range 3 { // after a script flush, go-redis sends the source: that wakes too
			if i == 2 {
				if err := b.Client.ScriptFlush(ctx(t)).Err(); err != nil {
					t.Fatal(err)
				}
			}
			ref := newRef()
			if err := enq.Enqueue(ctx(t), queue.Job{Ref: ref, Tool: "echo", Seq: 1, Queue: "default"}); err != nil {
				t.Fatalf("Enqueue: %v", err)
			}
			select {
			case <-wake.C:
			case <-time.After(10 * time.Second):
				t.Fatalf("enqueue %d: no wake-up on the queue's channel", i)
			}
			if _, err := e.inspect.GetTaskInfo(e.queue, queue.ID(ref, 1)); err != nil {
				t.Fatalf("the job is not queued: %v", err)
			}
		}
	})
}

func TestCreateWithJobAfterScriptFlush(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newCaptureEnv(t, b)
		if _, err := e.create(t, newRef(), 0); err != nil {
			t.Fatalf("Create: %v", err)
		}
		if err := b.Client.ScriptFlush(ctx(t)).Err(); err != nil {
			t.Fatal(err)
		}
		ref := newRef()
		if _, err := e.create(t, ref, 0); err != nil {
			t.Fatalf("Create after SCRIPT FLUSH: %v", err)
		}
		if e.get(t, ref).Status != "working" || !e.queued(t, ref.ID) {
			t.Fatal("record or job missing after SCRIPT FLUSH")
		}
	})
}

func TestCreateWithJobConflict(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newCaptureEnv(t, b)
		ref := newRef()
		// A job with the task's id is queued already (enqueued directly).
		if _, err := asynq.NewClientFromRedisClient(b.Client).Enqueue(asynq.NewTask(queue.Type, nil),
			asynq.TaskID(ref.ID), asynq.Queue(e.queue)); err != nil {
			t.Fatal(err)
		}
		rec, err := e.create(t, ref, 0)
		var jobErr *taskstate.JobError
		if !errors.As(err, &jobErr) || !errors.Is(err, queue.ErrJobConflict) || rec == nil {
			t.Fatalf("Create = %v, %v; want the record and a JobError wrapping ErrJobConflict", rec, err)
		}
		if e.get(t, ref).Status != "working" {
			t.Fatal("the record was not written")
		}
	})
}

func TestCreateWithJobRefused(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newCaptureEnv(t, b)
		if _, err := e.create(t, newRef(), 1); err != nil {
			t.Fatalf("Create: %v", err)
		}
		ref := newRef()
		_, err := e.create(t, ref, 1)
		if !errors.Is(err, taskstate.ErrLimit) {
			t.Fatalf("Create over the cap = %v, want ErrLimit", err)
		}
		if _, err := e.s.Get(ctx(t), ref); !errors.Is(err, taskstate.ErrNotFound) {
			t.Fatalf("refused record: Get = %v, want ErrNotFound", err)
		}
		// Its job may be queued; a claim finds no record, so a worker drops it.
		if _, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{}); !errors.Is(err, taskstate.ErrNotFound) {
			t.Fatalf("Claim of the refused task = %v, want ErrNotFound", err)
		}
	})
}
