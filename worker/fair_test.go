package worker_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// fairLog records the order in which tool runs start, by label.
type fairLog struct {
	mu     sync.Mutex
	starts []string
}

func (l *fairLog) add(label string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts = append(l.starts, label)
}

func (l *fairLog) count(label string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.starts {
		if s == label {
			n++
		}
	}
	return n
}

// before reports whether the first a comes before the n-th b.
func (l *fairLog) before(a, b string, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := 0
	for _, s := range l.starts {
		switch s {
		case a:
			return true
		case b:
			if seen++; seen == n {
				return false
			}
		}
	}
	return false
}

// submitAs creates a task of principal and enqueues its first job on q.
func (h *harness) submitAs(t testing.TB, principal, tool, q string) task {
	t.Helper()
	ctx := context.Background()
	rec, err := h.store.Create(ctx, taskstate.CreateParams{Principal: principal, Tool: tool,
		Arguments: json.RawMessage(`{}`), PollIntervalMs: 100})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	sub, err := h.hub.Subscribe(ctx, h.store.Keys().Events(rec.Ref))
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(sub.Close)
	if err := h.jobs.Enqueue(ctx, queue.Job{Ref: rec.Ref, Tool: tool, Queue: q}); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return task{ref: rec.Ref, sub: sub}
}

// waitFor polls cond until it holds, failing after bound.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, bound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fairTools are a long tool, which runs until release gets a value (or
// the worker stops), and a zero-second one; both log their starts.
func fairTools(h *harness, log *fairLog, release <-chan struct{}) []worker.Tool {
	long := h.tool("long", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
		log.add("long")
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return worker.TextResult("long done"), nil
	})
	quick := h.tool("quick", func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
		log.add("quick")
		return worker.TextResult("quick done"), nil
	})
	return []worker.Tool{long, quick}
}

// TestFairSlotTurnover: with the default settings (no share), one
// principal floods a queue of 4 slots with 100 long tasks and takes all
// 4 (work-conserving: no one else waits); another principal's
// zero-second call is answered in the first slot that frees, before a
// fifth long task starts, and the flood then goes on in every slot.
func TestFairSlotTurnover(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		log := &fairLog{}
		release := make(chan struct{})
		cfg := h.config()
		cfg.Queues = map[string]int{h.queue: 4}
		h.start(t, cfg, fairTools(h, log, release)...)
		var flood []task
		for range 100 {
			flood = append(flood, h.submitAs(t, "flood", "long", h.queue))
		}
		waitFor(t, "4 long tasks running", func() bool { return log.count("long") == 4 })
		other := h.submitAs(t, "other", "quick", h.queue)
		freed := time.Now()
		release <- struct{}{} // one slot turns over
		if rec := h.terminal(t, other); rec.Status != proto.StatusCompleted {
			t.Fatalf("the other principal's call ended %s", rec.Status)
		}
		t.Logf("zero-second call answered %v after a slot freed", time.Since(freed).Round(time.Millisecond))
		waitFor(t, "the flood in every slot again", func() bool { return log.count("long") == 5 })
		if !log.before("quick", "long", 5) {
			t.Fatalf("a fifth long task started before the other principal's call: starts %v", log.starts)
		}
		for range 4 { // the flood goes on: every freed slot runs its next task
			release <- struct{}{}
		}
		waitFor(t, "the flood's next tasks", func() bool { return log.count("long") == 9 })
		waitFor(t, "5 long tasks completed", func() bool {
			n := 0
			for _, tk := range flood {
				if h.get(t, tk.ref).Status == proto.StatusCompleted {
					n++
				}
			}
			return n == 5
		})
	})
}

// TestFairCapWaitsInLine: under a hard cap (MaxRunningPerPrincipal) a
// principal's jobs over it wait in line, not re-enqueued (the record's
// job number does not move), and run as its running ones end, while
// another principal uses the free slots.
func TestFairCapWaitsInLine(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		log := &fairLog{}
		release := make(chan struct{})
		cfg := h.config()
		cfg.Queues = map[string]int{h.queue: 4}
		cfg.MaxRunningPerPrincipal = map[string]int{"*": 2}
		h.start(t, cfg, fairTools(h, log, release)...)
		var flood []task
		for range 10 {
			flood = append(flood, h.submitAs(t, "flood", "long", h.queue))
		}
		waitFor(t, "2 long tasks running", func() bool { return log.count("long") == 2 })
		for range 3 {
			if rec := h.terminal(t, h.submitAs(t, "other", "quick", h.queue)); rec.Status != proto.StatusCompleted {
				t.Fatalf("the other principal's call ended %s", rec.Status)
			}
		}
		if n := log.count("long"); n != 2 {
			t.Fatalf("%d long tasks started under a cap of 2", n)
		}
		for _, tk := range flood[2:] {
			if rec := h.get(t, tk.ref); rec.Resumes != 0 || rec.Running != 0 || rec.Status != proto.StatusWorking {
				t.Errorf("waiting task %s: %s, job %d, running %d; want working, its first job, not held",
					tk.ref.ID, rec.Status, rec.Resumes, rec.Running)
			}
		}
		release <- struct{}{}
		waitFor(t, "the next long task after one ended", func() bool { return log.count("long") == 3 })
		if n := log.count("long"); n != 3 {
			t.Errorf("%d long tasks started once one of 2 ended under a cap of 2, want 3", n)
		}
	})
}

// TestFairSkipsAJobWhoseHashWent: a job deleted while it waited in its
// principal's line (its asynq hash gone, as asynq's inspector deletes a
// pending job, without the line) is passed over: the dequeue takes the
// next job in line, and the line ends empty.
func TestFairSkipsAJobWhoseHashWent(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		ran := make(chan string, 4)
		quick := h.tool("quick", func(_ context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			ran <- c.TaskID
			return worker.TextResult("quick done"), nil
		})
		gone := h.submitAs(t, "one", "quick", h.queue)
		next := h.submitAs(t, "one", "quick", h.queue)
		aq := h.jobs.Keys().Queue(h.queue)
		if err := b.Client.Del(context.Background(), "asynq:{"+aq+"}:t:"+gone.ref.ID).Err(); err != nil {
			t.Fatal(err)
		}
		cfg := h.config()
		cfg.Queues = map[string]int{h.queue: 1}
		h.start(t, cfg, quick)
		if rec := h.terminal(t, next); rec.Status != proto.StatusCompleted {
			t.Fatalf("the next job's task ended %s", rec.Status)
		}
		if id := <-ran; id != next.ref.ID {
			t.Fatalf("ran %s first, want the next job's task %s", id, next.ref.ID)
		}
		ctx := context.Background()
		if n := b.Client.LLen(ctx, "asynq:{"+aq+"}:mcpq:w:"+gone.ref.Owner).Val(); n != 0 {
			t.Fatalf("%d jobs left in the principal's line", n)
		}
		// The deleted job was not taken: no hash made again, not active.
		if n := b.Client.Exists(ctx, "asynq:{"+aq+"}:t:"+gone.ref.ID).Val(); n != 0 {
			t.Fatal("the deleted job's hash is back")
		}
		if active := b.Client.LRange(ctx, "asynq:{"+aq+"}:active", 0, -1).Val(); slices.Contains(active, gone.ref.ID) {
			t.Fatalf("the deleted job is in the active list %v", active)
		}
	})
}
