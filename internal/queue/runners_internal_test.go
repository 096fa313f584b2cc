package queue

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
)

type ctxKey struct{}

// TestRunnersDeliver: each delivery gets its own context and task and
// returns its own error, and deliveries one after another reuse one
// runner (its stack), not a goroutine each.
func TestRunnersDeliver(t *testing.T) {
	p := newRunners(func(ctx context.Context, task *asynq.Task) error {
		if want := ctx.Value(ctxKey{}); want != task.Type() {
			return errors.New("context of another job: " + want.(string))
		}
		if n, _ := strconv.Atoi(task.Type()); n%2 == 1 {
			return errors.New("odd " + task.Type())
		}
		return nil
	}, slog.New(slog.DiscardHandler))
	defer p.stop()
	for i := range 50 {
		name := strconv.Itoa(i)
		err := p.deliver(context.WithValue(context.Background(), ctxKey{}, name), asynq.NewTask(name, nil))
		switch {
		case i%2 == 0 && err != nil:
			t.Fatalf("job %d: %v", i, err)
		case i%2 == 1 && (err == nil || err.Error() != "odd "+name):
			t.Fatalf("job %d: error %v, want odd %s", i, err, name)
		}
	}
	if n := p.started.Load(); n != 1 {
		t.Fatalf("%d runners started for jobs one after another, want 1", n)
	}
}

// TestRunnersConcurrent: jobs that run at once each get a runner, and a
// job delivered after stop still runs (on a runner that then ends).
func TestRunnersConcurrent(t *testing.T) {
	const n = 8
	release := make(chan struct{})
	var running sync.WaitGroup
	running.Add(n)
	p := newRunners(func(ctx context.Context, task *asynq.Task) error {
		if task.Type() == "blocking" {
			running.Done()
			<-release
		}
		return nil
	}, slog.New(slog.DiscardHandler))
	errs := make(chan error, n)
	for range n {
		go func() { errs <- p.deliver(context.Background(), asynq.NewTask("blocking", nil)) }()
	}
	running.Wait() // all n run at once: none could wait for another's runner
	if got := p.started.Load(); got != n {
		t.Fatalf("%d runners for %d jobs at once", got, n)
	}
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	p.stop()
	done := make(chan error, 1)
	go func() { done <- p.deliver(context.Background(), asynq.NewTask("after", nil)) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second): // a bound on a broken build, not a timing
		t.Fatal("a job delivered after stop never ran")
	}
}

// TestRunnersPanic: a panicking delivery is the job's error (asynq retries
// it), as on asynq's own goroutine, and the process and the next job go
// on.
func TestRunnersPanic(t *testing.T) {
	var logs strings.Builder
	p := newRunners(func(ctx context.Context, task *asynq.Task) error {
		if task.Type() == "boom" {
			panic("boom")
		}
		return nil
	}, slog.New(slog.NewTextHandler(&logs, nil)))
	defer p.stop()
	err := p.deliver(context.Background(), asynq.NewTask("boom", nil))
	if err == nil || !strings.Contains(err.Error(), "panicked: boom") {
		t.Fatalf("error %v", err)
	}
	if !strings.Contains(logs.String(), "job delivery panicked") || !strings.Contains(logs.String(), "runners.go") {
		t.Fatalf("no log of the panic with its stack: %s", logs.String())
	}
	if err := p.deliver(context.Background(), asynq.NewTask("fine", nil)); err != nil {
		t.Fatal(err)
	}
}
