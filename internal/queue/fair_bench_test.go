package queue

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/redistest"
)

// BenchmarkFairRedisCPU measures the Redis CPU of the fair queue's two
// scripts apart (docs/benchmarks.md, "The queue's scripts apart"), from
// INFO commandstats (usec and calls of evalsha) around the timed calls, as
// redis-µs/call: fair_enqueue.lua for a job that names its principal
// (waits in its line) and asynq's own enqueue script (asynq's client, no
// principal: the floor); fair_dequeue.lua taking the oldest job of one
// waiting principal's line, and taking a job from asynq's pending list
// (asynq's own dequeue's path, plus what fair_dequeue.lua adds to it).
// Each dequeued job leaves the active list again, as its done would. Only
// on a real Redis:
//
//	MCPQ_TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test -run xxx -bench FairRedisCPU -benchtime 5000x ./internal/queue
func BenchmarkFairRedisCPU(b *testing.B) {
	if os.Getenv("MCPQ_TEST_REDIS_URL") == "" {
		b.Skip("needs a real Redis: set MCPQ_TEST_REDIS_URL")
	}
	ctx := context.Background()
	const owner = "p2f183a4e64493af3f377f745" // an owner tag's length
	setup := func(b *testing.B) *fairQueue {
		be := redistest.Real(b)
		q := &fairQueue{t: b, rdb: be.Client, base: "asynq:{" + be.Prefix + "q}:"}
		if err := fairEnqueue.Load(ctx, be.Client).Err(); err != nil {
			b.Fatal(err)
		}
		if err := fairDequeue.Load(ctx, be.Client).Err(); err != nil {
			b.Fatal(err)
		}
		return q
	}
	id := func(i int) string { return fmt.Sprintf("job%09d", i) }
	measure := func(b *testing.B, q *fairQueue, call func(i int)) {
		calls0, usec0 := redistest.CommandStats(b, q.rdb, "evalsha")
		b.ResetTimer()
		for i := range b.N {
			call(i)
		}
		b.StopTimer()
		calls, usec := redistest.CommandStats(b, q.rdb, "evalsha")
		if calls == calls0 {
			b.Fatal("no evalsha calls counted")
		}
		b.ReportMetric(float64(usec-usec0)/float64(calls-calls0), "redis-µs/call")
		b.ReportMetric(float64(calls-calls0)/float64(b.N), "calls/op")
	}
	b.Run("enqueue/asynq", func(b *testing.B) {
		q := setup(b)
		c := asynq.NewClientFromRedisClient(q.rdb)
		name := strings.TrimSuffix(strings.TrimPrefix(q.base, "asynq:{"), "}:")
		measure(b, q, func(i int) {
			if _, err := c.Enqueue(asynq.NewTask(Type, []byte(`{"id":"`+id(i)+`"}`)), asynq.Queue(name), asynq.TaskID(id(i))); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("enqueue/fair", func(b *testing.B) {
		q := setup(b)
		measure(b, q, func(i int) { q.enqueue(id(i), owner) })
	})
	dequeue := func(b *testing.B, owned string) {
		q := setup(b)
		for i := range b.N {
			q.enqueue(id(i), owned)
		}
		measure(b, q, func(int) {
			if got := q.dequeue(); got == "" {
				b.Fatal("nothing dequeued")
			} else {
				q.done(got)
			}
		})
	}
	b.Run("dequeue/line", func(b *testing.B) { dequeue(b, owner) })
	b.Run("dequeue/pending", func(b *testing.B) { dequeue(b, "") })
}
