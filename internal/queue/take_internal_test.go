package queue

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// TestDequeueClaims checks take.go: with ServeConfig.Claim set, the woken
// dequeue of an idle worker, for a job whose tool it serves, claims its task in the same script
// (the delivery carries the claim's reply, and the record is claimed by the
// store's worker, attempt 1, before the handler ran), while a tool not
// served, a task with an attempt running and a queue whose Claim answers
// nil reach the handler unclaimed; for a task cancelled before its dequeue
// the claim's reply says the job is a no-op. On a cluster no dequeue
// claims.
func TestDequeueClaims(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		keys := Keys{Prefix: b.Prefix}
		store := taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix, Worker: "w1"})
		hub := events.NewHub(b.Client)
		t.Cleanup(func() { _ = hub.Close() })
		ran := make(chan Job, 8)
		var holding atomic.Int64 // the server's processor holds a dequeue
		srvs, err := Serve(ctx, ServeConfig{Redis: b.Client, Keys: keys, Hub: hub,
			Holding: func(d float64) { holding.Add(int64(d)) },
			Groups:  []Group{{Queues: []string{"default", "plain"}, Concurrency: 1}},
			// Long holds: every job reaches a held dequeue through its wake-up.
			TaskCheckInterval: 10 * time.Second, ShutdownTimeout: time.Second,
			Logger: slog.New(slog.DiscardHandler),
			Claim: func(q string) []any {
				if q == "plain" {
					return nil
				}
				return append(store.ClaimArgs(q), ",echo,")
			}, ClaimStore: store},
			func(ctx context.Context, j Job) error { ran <- j; return nil })
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		t.Cleanup(srvs.Stop)
		client := NewClient(b.Client, Options{Prefix: b.Prefix})
		args := json.RawMessage(`{"text":"hi"}`)
		deliver := func(tool, q string, prep func(ref taskstate.Ref)) (taskstate.Ref, Job) {
			t.Helper()
			rec, err := store.Create(ctx, taskstate.CreateParams{Principal: "alice", Tool: tool, Arguments: args,
				StatusMessage: "Queued", PollIntervalMs: 1000})
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			if prep != nil {
				prep(rec.Ref)
			}
			// An idle worker's woken dequeue claims; a sweep's does not.
			for holding.Load() == 0 {
				if ctx.Err() != nil {
					t.Fatal("the server never held its dequeue")
				}
				time.Sleep(time.Millisecond)
			}
			if err := client.Enqueue(ctx, Job{Ref: rec.Ref, Tool: tool, Queue: q}); err != nil {
				t.Fatalf("Enqueue: %v", err)
			}
			select {
			case j := <-ran:
				if j.Ref != rec.Ref {
					t.Fatalf("delivered %v, want %v", j.Ref, rec.Ref)
				}
				return rec.Ref, j
			case <-ctx.Done():
				t.Fatalf("job of %s not delivered", tool)
			}
			return taskstate.Ref{}, Job{}
		}
		get := func(ref taskstate.Ref) *taskstate.Record {
			t.Helper()
			r, err := store.Get(ctx, ref)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			return r
		}

		ref, j := deliver("echo", "default", nil)
		if b.Cluster {
			if j.Claimed != nil {
				t.Fatalf("cluster: the dequeue claimed: %v", j.Claimed)
			}
		} else {
			if j.Claimed == nil {
				t.Fatal("a served tool's job came unclaimed")
			}
			if r := get(ref); r.Running != 1 || r.Attempt != 1 || r.StatusMessage != "Running" {
				t.Fatalf("record after the dequeue: running %d, attempt %d, %q", r.Running, r.Attempt, r.StatusMessage)
			}
			c, err := store.ClaimReply(ref, j.Claimed)
			if err != nil {
				t.Fatalf("ClaimReply: %v", err)
			}
			if c.Attempt != 1 || c.Record.Tool != "echo" || string(c.Record.Arguments) != string(args) ||
				c.Record.Principal != "alice" || c.Record.CreatedAt.IsZero() {
				t.Fatalf("claim: attempt %d, record %+v", c.Attempt, c.Record)
			}
		}

		ref, j = deliver("other", "default", nil)
		if j.Claimed != nil || get(ref).Running != 0 {
			t.Fatalf("a tool not served here was claimed: %v", j.Claimed)
		}

		ref, j = deliver("echo", "plain", nil)
		if j.Claimed != nil || get(ref).Running != 0 {
			t.Fatalf("a queue without claim arguments claimed: %v", j.Claimed)
		}

		ref, j = deliver("echo", "default", func(ref taskstate.Ref) {
			if _, err := store.Claim(ctx, ref, 0, taskstate.Share{}); err != nil {
				t.Fatalf("Claim: %v", err)
			}
		})
		if r := get(ref); j.Claimed != nil || r.Attempt != 1 {
			t.Fatalf("a task with an attempt running: claimed %v, attempt %d", j.Claimed, r.Attempt)
		}

		ref, j = deliver("echo", "default", func(ref taskstate.Ref) {
			if err := store.RequestCancel(ctx, ref); err != nil {
				t.Fatalf("RequestCancel: %v", err)
			}
		})
		if !b.Cluster {
			if _, err := store.ClaimReply(ref, j.Claimed); !errors.Is(err, taskstate.ErrTerminal) {
				t.Fatalf("cancelled before its dequeue: %v", err)
			}
			if r := get(ref); r.Status != proto.StatusCancelled {
				t.Fatalf("cancelled before its dequeue: status %s", r.Status)
			}
		}
		srvs.Stop()
		if srvs.take != nil && len(srvs.take.claims) != 0 {
			t.Fatalf("%d claims left undelivered", len(srvs.take.claims))
		}
	})
}
