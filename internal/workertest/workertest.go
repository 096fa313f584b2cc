// Package workertest runs a real worker for tests and drives it as the
// front end does: task records through taskstate, jobs through asynq,
// outcomes read back when the task's events say something changed.
package workertest

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/job"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// Bound is the failure bound of every wait: it decides how long a broken
// build takes to fail, never whether a working one passes.
const Bound = 15 * time.Second

// Env is a running worker and the clients that drive it.
type Env struct {
	Store  *taskstate.Store
	Client *asynq.Client
	Hub    *taskstate.Hub
}

// Start builds a worker with build (given a config on b with a 10 ms
// TaskCheckInterval, and a context that lives as long as the worker runs)
// and runs it until the test ends; the cleanup requires Run to return nil.
// It returns once the worker is ready.
func Start(t testing.TB, b *redistest.Backend, build func(ctx context.Context, cfg worker.Config) (*worker.Worker, error)) *Env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := build(ctx, worker.Config{Redis: b.Client, Prefix: b.Prefix, TaskCheckInterval: 10 * time.Millisecond})
	if err != nil {
		cancel()
		t.Fatalf("build worker: %v", err)
	}
	e := &Env{Store: taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix}),
		Client: asynq.NewClientFromRedisClient(b.Client), Hub: taskstate.NewHub(b.Client)}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(Bound):
			t.Errorf("Run did not return after cancel")
		}
		e.Hub.Close()
		e.Client.Close()
	})
	// Ready: the catalog is published (and its list changes announced)
	// before the test subscribes to anything.
	select {
	case <-w.Ready():
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("Run returned before the worker was ready: %v", err)
	case <-time.After(Bound):
		t.Fatal("worker not ready within the bound")
	}
	return e
}

// Task is a submitted task and a subscription to its events, made before
// anything could publish on them.
type Task struct {
	Ref taskstate.Ref
	Sub *taskstate.Subscription
}

// Submit subscribes to a new task's events, creates its record with p and
// enqueues its job on queue ("" for worker.DefaultQueue).
func (e *Env) Submit(t testing.TB, p taskstate.CreateParams, queue string) *Task {
	t.Helper()
	ctx := context.Background()
	if p.ID == "" {
		p.ID = taskstate.NewID()
	}
	tk := &Task{Ref: taskstate.Ref{Owner: taskstate.OwnerTag(p.Principal), ID: p.ID}}
	sub, err := e.Hub.Subscribe(ctx, e.Store.Keys().Events(tk.Ref))
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(sub.Close)
	tk.Sub = sub
	if _, err := e.Store.Create(ctx, p); err != nil {
		t.Fatalf("Create: %v", err)
	}
	e.Enqueue(t, tk.Ref, queue, 0)
	return tk
}

// Enqueue puts the task's job on queue ("" for worker.DefaultQueue); resume
// > 0 numbers a resumption after input, as the front end does.
func (e *Env) Enqueue(t testing.TB, ref taskstate.Ref, queue string, resume int64) {
	t.Helper()
	if queue == "" {
		queue = worker.DefaultQueue
	}
	id := job.ID(ref, resume)
	job := asynq.NewTask(job.Type, job.Payload(ref))
	if _, err := e.Client.Enqueue(job, asynq.TaskID(id), asynq.Queue(e.Store.Keys().Queue(queue))); err != nil {
		t.Fatalf("Enqueue %s: %v", id, err)
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
