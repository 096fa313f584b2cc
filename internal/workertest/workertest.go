// Package workertest is mcpq's one worker start-up harness for tests: Run
// runs a built worker until the test ends (mcpqtest.New uses it, as do the
// worker package's tests), and Start builds one on a test backend and
// drives it as the front end does: task records through taskstate, jobs
// through mcpq's queue, outcomes read back when the task's events say
// something changed. Tool authors use mcpqtest; this package is for what
// mcpqtest does not offer publicly (a real redis-server, any
// worker.Config, raw task records).
package workertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
	"github.com/mcpq/mcpq/worker"
)

// Bound is the failure bound of every wait: it decides how long a broken
// build takes to fail, never whether a working one passes.
const Bound = 15 * time.Second

// Running is a worker that Run runs.
type Running struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// Run runs w until the test ends and returns once w is ready (its catalog
// is published and it takes jobs). The test's cleanup stops it (Stop) and
// fails the test unless Run returned nil.
func Run(t testing.TB, w *worker.Worker) *Running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- w.Run(ctx) }()
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Errorf("worker: Run: %v", err)
		}
	})
	select {
	case <-w.Ready():
	case err := <-r.done:
		r.done <- err // for Stop
		t.Fatalf("worker: Run returned before the worker was ready: %v", err)
	case <-time.After(Bound):
		t.Fatalf("worker: not ready within %v", Bound)
	}
	return r
}

// Stop cancels the worker's Run and returns what it returned; later calls
// return the same. Should Run not return within Bound, Stop says so and
// still waits: the worker must not outlive its Redis client (asynq v0.26.0's
// subscriber dereferences a nil message when its client closes under a
// running server, subscriber.go:83, which would kill the test binary).
func (r *Running) Stop() error {
	r.once.Do(func() {
		r.cancel()
		select {
		case r.err = <-r.done:
		case <-time.After(Bound):
			r.err = <-r.done
			if r.err == nil {
				r.err = errSlowStop
			}
		}
	})
	return r.err
}

// errSlowStop: Run returned, but later than Bound after its cancel.
var errSlowStop = fmt.Errorf("returned more than %v after its context ended", Bound)

// Env is a running worker and the clients that drive it.
type Env struct {
	Store *taskstate.Store
	Jobs  *queue.Client
	Hub   *events.Hub
	*Running
}

// Start builds a worker with build (given a config on b with a 10 ms
// TaskCheckInterval, and a context that lives as long as the worker runs)
// and runs it until the test ends (Run). It returns once the worker is
// ready.
func Start(t testing.TB, b *redistest.Backend, build func(ctx context.Context, cfg worker.Config) (*worker.Worker, error)) *Env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // after the worker stopped (cleanups run last first)
	w, err := build(ctx, worker.Config{Redis: b.Client, Prefix: b.Prefix, TaskCheckInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("build worker: %v", err)
	}
	e := &Env{Store: taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix}),
		Jobs: queue.NewClient(b.Client, queue.Options{Prefix: b.Prefix}), Hub: events.NewHub(b.Client)}
	t.Cleanup(func() { e.Hub.Close() })
	e.Running = Run(t, w)
	return e
}

// Task is a submitted task and a subscription to its events, made before
// anything could publish on them.
type Task struct {
	Ref taskstate.Ref
	Sub *events.Subscription
	// Tool is the task's catalog key, which its jobs carry.
	Tool string
}

// Submit subscribes to a new task's events, creates its record with p and
// enqueues its job on queue ("" for worker.DefaultQueue).
func (e *Env) Submit(t testing.TB, p taskstate.CreateParams, queue string) *Task {
	t.Helper()
	ctx := context.Background()
	if p.ID == "" {
		p.ID = taskstate.NewID()
	}
	tk := &Task{Ref: taskstate.Ref{Owner: taskstate.OwnerTag(p.Principal), ID: p.ID}, Tool: p.Tool}
	sub, err := e.Hub.Subscribe(ctx, e.Store.Keys().Events(tk.Ref))
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(sub.Close)
	tk.Sub = sub
	if _, err := e.Store.Create(ctx, p); err != nil {
		t.Fatalf("Create: %v", err)
	}
	e.Enqueue(t, tk, queue, 0)
	return tk
}

// Enqueue puts the task's job on q ("" for worker.DefaultQueue); seq > 0
// numbers a later job (a resumption after input), as the front end does.
func (e *Env) Enqueue(t testing.TB, tk *Task, q string, seq int64) {
	t.Helper()
	if q == "" {
		q = worker.DefaultQueue
	}
	j := queue.Job{Ref: tk.Ref, Tool: tk.Tool, Seq: seq, Queue: q}
	if err := e.Jobs.Enqueue(context.Background(), j); err != nil {
		t.Fatalf("Enqueue %s: %v", queue.ID(j.Ref, j.Seq), err)
	}
}

// Wait reads the record now and after every event until ok accepts it;
// onEvent (may be nil) sees every event on the way.
func (e *Env) Wait(t testing.TB, tk *Task, what string, ok func(*taskstate.Record) bool, onEvent func(string)) *taskstate.Record {
	t.Helper()
	timeout := time.NewTimer(Bound)
	defer timeout.Stop()
	var last *taskstate.Record
	for {
		if rec, err := e.Store.Get(context.Background(), tk.Ref); err == nil {
			last = rec
			if ok(rec) {
				return rec
			}
		}
		select {
		case ev := <-tk.Sub.C:
			if onEvent != nil {
				onEvent(ev)
			}
		case <-timeout.C:
			t.Fatalf("no %s within %v; last record %+v", what, Bound, last)
		}
	}
}

// Terminal waits for the task to end.
func (e *Env) Terminal(t testing.TB, tk *Task) *taskstate.Record {
	t.Helper()
	return e.Wait(t, tk, "terminal status", func(r *taskstate.Record) bool { return r.Status.Terminal() }, nil)
}
