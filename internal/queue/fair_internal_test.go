package queue

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redistest"
)

// fairQueue drives fair_enqueue.lua and fair_dequeue.lua on one queue's
// keys, as asynq's client and server call them (fair.go).
type fairQueue struct {
	t    testing.TB
	rdb  redis.UniversalClient
	base string // "asynq:{<queue>}:"
	cap  int
}

func (q *fairQueue) enqueue(id, owner string) {
	q.t.Helper()
	msg := `{"id":"` + id + `"}`
	if owner != "" {
		msg = `{"o":"` + owner + `","id":"` + id + `"}`
	}
	err := fairEnqueue.Run(context.Background(), q.rdb, []string{q.base + "t:" + id, q.base + "pending"},
		msg, id, time.Now().UnixNano()).Err()
	if err != nil {
		q.t.Fatalf("fair_enqueue %s: %v", id, err)
	}
}

// dequeue is the job id the next dequeue hands out, "" for none.
func (q *fairQueue) dequeue() string {
	q.t.Helper()
	args := fairDequeueArgs([]any{time.Now().Add(time.Minute).Unix(), q.base + "t:"}, time.Now(), q.cap)
	msg, err := fairDequeue.Run(context.Background(), q.rdb,
		[]string{q.base + "pending", q.base + "paused", q.base + "active", q.base + "lease"}, args...).Text()
	if err == redis.Nil {
		return ""
	}
	if err != nil {
		q.t.Fatalf("fair_dequeue: %v", err)
	}
	var job struct{ ID string }
	if err := json.Unmarshal([]byte(msg), &job); err != nil {
		q.t.Fatalf("fair_dequeue answered %q: %v", msg, err)
	}
	return job.ID
}

// done takes id out of the active list and the lease set, as asynq's
// done does.
func (q *fairQueue) done(id string) {
	q.t.Helper()
	ctx := context.Background()
	if err := q.rdb.LRem(ctx, q.base+"active", 0, id).Err(); err != nil {
		q.t.Fatal(err)
	}
	if err := q.rdb.ZRem(ctx, q.base+"lease", id).Err(); err != nil {
		q.t.Fatal(err)
	}
}

// TestFairDequeueAfterAPendingJob: a dequeue that found every waiting
// principal at its cap remembers the queue's state, so that the next ones
// cost three reads until it changes. A job taken from asynq's pending
// list (a retry or a scheduled job come due, a requeue) fills the active
// list back to its length then: if a running job of the capped principal
// ended meanwhile, that principal is under its cap again with its next
// job waiting, and the dequeue after must hand that job out, not answer
// "blocked" from a state that only looks the same.
func TestFairDequeueAfterAPendingJob(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		q := &fairQueue{t: t, rdb: b.Client, base: "asynq:{" + b.Prefix + "fair}:", cap: 1}
		q.enqueue("ax01", "pX")
		q.enqueue("bx02", "pX")
		if got := q.dequeue(); got != "ax01" {
			t.Fatalf("first dequeue: %q, want ax01", got)
		}
		if got := q.dequeue(); got != "" {
			t.Fatalf("dequeue with pX at its cap of 1: %q, want none", got)
		}
		q.done("ax01")
		// A retry come due: asynq's forwarder moves it to the pending list.
		ctx := context.Background()
		if err := b.Client.HSet(ctx, q.base+"t:rr03", "msg", `{"id":"rr03"}`, "state", "pending").Err(); err != nil {
			t.Fatal(err)
		}
		if err := b.Client.LPush(ctx, q.base+"pending", "rr03").Err(); err != nil {
			t.Fatal(err)
		}
		if got := q.dequeue(); got != "rr03" {
			t.Fatalf("dequeue with a pending job: %q, want rr03", got)
		}
		if got := q.dequeue(); got != "bx02" {
			t.Fatalf("dequeue with pX running none: %q, want its waiting job bx02", got)
		}
		if got := q.dequeue(); got != "" {
			t.Fatalf("dequeue of an empty queue: %q, want none", got)
		}
	})
}
