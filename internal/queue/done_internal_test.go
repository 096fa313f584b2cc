package queue

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// warnings keeps the messages logged at Warn and above.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

// TestDoneBesideOutcome pins what done.go leans on in asynq (its done
// script's SHA, keys and arguments): a handler that sends its job's done in
// its own pipeline, as taskstate.Store.Finish does, leaves asynq's done
// call to be answered without Redis, and asynq's books come out as if it
// had sent it (the job gone from its lists and hash, counted processed
// once, no warning). The first job may find the script not loaded yet
// (asynq loads it with its first done), never a later one. On a cluster a
// delivery carries no done call and asynq sends its own.
func TestDoneBesideOutcome(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		keys := Keys{Prefix: b.Prefix}
		hub := events.NewHub(b.Client)
		t.Cleanup(func() { _ = hub.Close() })
		warned := &warnings{}
		fail := make(map[string]bool)
		var mu sync.Mutex
		ran := make(chan Job, 8)
		srvs, err := Serve(ctx, ServeConfig{Redis: b.Client, Keys: keys, Hub: hub,
			Groups: []Group{{Queues: []string{"default"}, Concurrency: 1}}, TaskCheckInterval: 20 * time.Millisecond,
			ShutdownTimeout: time.Second, Logger: slog.New(warned)},
			func(ctx context.Context, j Job) error {
				defer func() { ran <- j }()
				if j.Done != nil {
					pipe := b.Client.Pipeline()
					pipe.Set(ctx, b.Prefix+"outcome:"+j.Ref.ID, "done", time.Minute)
					j.Done.Pipe(ctx, pipe)
					_, _ = pipe.Exec(ctx)
					_ = j.Done.Result(ctx, b.Client)
				}
				mu.Lock()
				defer mu.Unlock()
				if fail[j.Ref.ID] {
					return errors.New("handler failed after its outcome")
				}
				return nil
			})
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		t.Cleanup(srvs.Stop)
		client := NewClient(b.Client, Options{Prefix: b.Prefix})
		inspect := asynq.NewInspectorFromRedisClient(b.Client)
		aq := keys.Queue("default")
		const jobs = 3
		for i := range jobs + 1 {
			ref := taskstate.Ref{Owner: "p0", ID: taskstate.NewID()}
			if i == jobs {
				mu.Lock()
				fail[ref.ID] = true
				mu.Unlock()
			}
			if err := client.Enqueue(ctx, Job{Ref: ref, Tool: "echo", Queue: "default"}); err != nil {
				t.Fatalf("Enqueue: %v", err)
			}
			var j Job
			select {
			case j = <-ran:
			case <-ctx.Done():
				t.Fatalf("job %d not delivered", i)
			}
			if (j.Done == nil) != b.Cluster {
				t.Fatalf("job %d: Done is %v on %s", i, j.Done, b.Name)
			}
			// asynq's books once its done call returned (or, for the
			// failing handler, its retry did).
			deadline := time.Now().Add(10 * time.Second)
			for {
				info, err := inspect.GetQueueInfo(aq)
				if err == nil && info.Active == 0 && (info.Processed == i+1 || i == jobs) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("job %d: queue %+v, %v", i, info, err)
				}
				time.Sleep(time.Millisecond)
			}
			if _, err := inspect.GetTaskInfo(aq, ref.ID); !errors.Is(err, asynq.ErrTaskNotFound) && i < jobs {
				t.Fatalf("job %d: asynq still holds the done job: %v", i, err)
			}
		}
		srvs.ahead.mu.Lock()
		answered, left := srvs.ahead.answered, len(srvs.ahead.jobs)
		srvs.ahead.mu.Unlock()
		switch {
		case b.Cluster && answered != 0:
			t.Errorf("cluster: %d done calls answered without Redis", answered)
		case !b.Cluster && answered < jobs-1:
			t.Errorf("%d of %d done calls answered without Redis: asynq's done script, keys or arguments changed", answered, jobs)
		}
		if left != 0 {
			t.Errorf("%d jobs left waiting for asynq's done call", left)
		}
		if w := warned.all(); strings.Contains(w, "Could not remove task") {
			t.Errorf("asynq's own done failed:\n%s", w)
		}
	})
}
