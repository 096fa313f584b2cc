package taskstate_test

// Micro-benchmarks of every transition script through its Store method, on
// miniredis and, when MCPQ_TEST_REDIS_URL is set, on that redis-server.
// Tasks a script consumes (claim, finish, cancel, input, answer) are made
// before the timer starts. Run:
//
//	go test -run xxx -bench . ./taskstate
//	MCPQ_TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test -run xxx -bench . ./taskstate

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// benchEach runs fn on miniredis and, when MCPQ_TEST_REDIS_URL is set, on
// the real server.
func benchEach(b *testing.B, fn func(b *testing.B, s *taskstate.Store)) {
	b.Run("miniredis", func(b *testing.B) {
		be := redistest.Mini(b)
		fn(b, taskstate.New(be.Client, taskstate.Options{Prefix: be.Prefix}))
	})
	if os.Getenv("MCPQ_TEST_REDIS_URL") != "" {
		b.Run("redis-server", func(b *testing.B) {
			be := redistest.Real(b)
			fn(b, taskstate.New(be.Client, taskstate.Options{Prefix: be.Prefix}))
		})
	}
}

// benchParams are the parameters the front end creates a small task with.
func benchParams() taskstate.CreateParams {
	ttl := time.Hour.Milliseconds()
	return taskstate.CreateParams{Principal: "bench@example.com", Tool: "noop", Arguments: json.RawMessage(`{"n":1}`),
		TTLMs: &ttl, PollIntervalMs: 1000, StatusMessage: "Queued",
		Capabilities: json.RawMessage(`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)}
}

// benchStage is how far benchTasks takes each task.
type benchStage int

const (
	stageCreated benchStage = iota
	stageClaimed
	stageParked
)

// benchTasks makes n tasks at stage and returns them with their attempts.
func benchTasks(b *testing.B, s *taskstate.Store, n int, stage benchStage) ([]taskstate.Ref, []int64) {
	b.Helper()
	ctx := context.Background()
	refs, attempts := make([]taskstate.Ref, n), make([]int64, n)
	for i := range n {
		rec, err := s.Create(ctx, benchParams())
		if err != nil {
			b.Fatal(err)
		}
		refs[i] = rec.Ref
		if stage == stageCreated {
			continue
		}
		c, err := s.Claim(ctx, rec.Ref, 0, taskstate.Share{})
		if err != nil {
			b.Fatal(err)
		}
		attempts[i] = c.Attempt
		if stage == stageParked {
			if err := s.RequestInput(ctx, rec.Ref, c.Attempt, benchInput); err != nil {
				b.Fatal(err)
			}
		}
	}
	return refs, attempts
}

var (
	benchInput   = map[string]json.RawMessage{"confirm": json.RawMessage(`{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object"}}}`)}
	benchAnswers = map[string]json.RawMessage{"confirm": json.RawMessage(`{"action":"accept","content":{}}`)}
	benchResult  = json.RawMessage(`{"content":[{"type":"text","text":"ok"}],"resultType":"complete"}`)
)

func BenchmarkCreate(b *testing.B) {
	benchEach(b, func(b *testing.B, s *taskstate.Store) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Create(ctx, benchParams()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCreatePriced is BenchmarkCreate of a priced call with billing
// on: the reservation (balance check, counters, ledger entry, hold) in
// the same script.
func BenchmarkCreatePriced(b *testing.B) {
	benchEach(b, func(b *testing.B, s *taskstate.Store) {
		ctx := context.Background()
		p := benchParams()
		if _, err := s.Accounts().Credit(ctx, p.Principal, proto.MaxAmount); err != nil {
			b.Fatal(err)
		}
		ceiling := int64(1)
		b.ReportAllocs()
		for b.Loop() {
			p := benchParams()
			p.Reserve = &ceiling
			if _, err := s.Create(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkGet(b *testing.B) {
	benchEach(b, func(b *testing.B, s *taskstate.Store) {
		ctx := context.Background()
		refs, _ := benchTasks(b, s, 1, stageClaimed)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Get(ctx, refs[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGetEnded is BenchmarkGet of a completed task whose result
// (1 kB) and receipt-free record were rebuilt at its end: its long values
// live in the record's companion key.
func BenchmarkGetEnded(b *testing.B) {
	benchEach(b, func(b *testing.B, s *taskstate.Store) {
		ctx := context.Background()
		refs, attempts := benchTasks(b, s, 1, stageClaimed)
		result := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("r", 1000) + `"}]}`)
		if err := s.Finish(ctx, refs[0], attempts[0], taskstate.Outcome{Status: proto.StatusCompleted, Result: result}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Get(ctx, refs[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkClaim(b *testing.B) {
	benchEach(b, func(b *testing.B, s *taskstate.Store) {
		ctx := context.Background()
		refs, _ := benchTasks(b, s, b.N, stageCreated)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, err := s.Claim(ctx, refs[i], 0, taskstate.Share{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkClaimShare is BenchmarkClaim under a principal's share of the
// queue that is never reached: the cost of counting at claim.
func BenchmarkClaimShare(b *testing.B) {
	benchEach(b, func(b *testing.B, s *taskstate.Store) {
		ctx := context.Background()
		refs, _ := benchTasks(b, s, b.N, stageCreated)
		share := taskstate.Share{Queue: "q", Max: b.N + 1}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, err := s.Claim(ctx, refs[i], 0, share); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkHeartbeat(b *testing.B) {
	benchEach(b, func(b *testing.B, s *taskstate.Store) {
		ctx := context.Background()
		refs, attempts := benchTasks(b, s, 1, stageClaimed)
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Heartbeat(ctx, refs[0], attempts[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkProgress(b *testing.B) {
	benchEach(b, func(b *testing.B, s *taskstate.Store) {
		ctx := context.Background()
		refs, attempts := benchTasks(b, s, 1, stageClaimed)
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Progress(ctx, refs[0], attempts[0], "Rendered frame 7 of 40"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkFinish(b *testing.B) {
	benchEach(b, func(b *testing.B, s *taskstate.Store) {
		ctx := context.Background()
		refs, attempts := benchTasks(b, s, b.N, stageClaimed)
		out := taskstate.Outcome{Status: proto.StatusCompleted, Result: benchResult, StatusMessage: "Completed"}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if err := s.Finish(ctx, refs[i], attempts[i], out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRequestCancel cancels running tasks (the flag-and-signal path).
func BenchmarkRequestCancel(b *testing.B) {
	benchEach(b, func(b *testing.B, s *taskstate.Store) {
		ctx := context.Background()
		refs, _ := benchTasks(b, s, b.N, stageClaimed)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if err := s.RequestCancel(ctx, refs[i]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkRequestInput(b *testing.B) {
	benchEach(b, func(b *testing.B, s *taskstate.Store) {
		ctx := context.Background()
		refs, attempts := benchTasks(b, s, b.N, stageClaimed)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if err := s.RequestInput(ctx, refs[i], attempts[i], benchInput); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAnswer answers a parked task's only request, which resumes it.
func BenchmarkAnswer(b *testing.B) {
	benchEach(b, func(b *testing.B, s *taskstate.Store) {
		ctx := context.Background()
		refs, _ := benchTasks(b, s, b.N, stageParked)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			res, err := s.Answer(ctx, refs[i], benchAnswers)
			if err != nil || res.Resume == 0 {
				b.Fatal(res, err)
			}
		}
	})
}

// BenchmarkRedisCPU measures the Redis CPU of each script, both ways
// (functions.go): FCALL of the function library and EVALSHA of the whole
// script (Options.NoFunctions), from INFO commandstats before and after
// the timed calls (usec and calls of eval, evalsha and fcall), reported as
// redis-µs/call and calls/op. Only on a real Redis:
//
//	MCPQ_TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test -run xxx -bench RedisCPU -benchtime 2000x ./taskstate
func BenchmarkRedisCPU(b *testing.B) {
	if os.Getenv("MCPQ_TEST_REDIS_URL") == "" {
		b.Skip("needs a real Redis: set MCPQ_TEST_REDIS_URL")
	}
	ctx := context.Background()
	out := taskstate.Outcome{Status: proto.StatusCompleted, Result: benchResult, StatusMessage: "Completed"}
	// Each op makes what its n calls consume and returns the call.
	ops := []struct {
		name string
		prep func(b *testing.B, s *taskstate.Store, n int) func(i int) error
	}{
		{"create", func(b *testing.B, s *taskstate.Store, n int) func(int) error {
			return func(int) error { _, err := s.Create(ctx, benchParams()); return err }
		}},
		{"claim", func(b *testing.B, s *taskstate.Store, n int) func(int) error {
			refs, _ := benchTasks(b, s, n, stageCreated)
			return func(i int) error { _, err := s.Claim(ctx, refs[i], 0, taskstate.Share{}); return err }
		}},
		{"heartbeat", func(b *testing.B, s *taskstate.Store, n int) func(int) error {
			refs, attempts := benchTasks(b, s, 1, stageClaimed)
			return func(int) error { return s.Heartbeat(ctx, refs[0], attempts[0]) }
		}},
		{"progress", func(b *testing.B, s *taskstate.Store, n int) func(int) error {
			refs, attempts := benchTasks(b, s, 1, stageClaimed)
			return func(int) error { return s.Progress(ctx, refs[0], attempts[0], "Rendered frame 7 of 40") }
		}},
		{"finish", func(b *testing.B, s *taskstate.Store, n int) func(int) error {
			refs, attempts := benchTasks(b, s, n, stageClaimed)
			return func(i int) error { return s.Finish(ctx, refs[i], attempts[i], out) }
		}},
		{"cancel", func(b *testing.B, s *taskstate.Store, n int) func(int) error {
			refs, _ := benchTasks(b, s, n, stageClaimed)
			return func(i int) error { return s.RequestCancel(ctx, refs[i]) }
		}},
		{"input", func(b *testing.B, s *taskstate.Store, n int) func(int) error {
			refs, attempts := benchTasks(b, s, n, stageClaimed)
			return func(i int) error { return s.RequestInput(ctx, refs[i], attempts[i], benchInput) }
		}},
		{"answer", func(b *testing.B, s *taskstate.Store, n int) func(int) error {
			refs, _ := benchTasks(b, s, n, stageParked)
			return func(i int) error { _, err := s.Answer(ctx, refs[i], benchAnswers); return err }
		}},
	}
	for _, op := range ops {
		for _, path := range []string{"evalsha", "fcall"} {
			b.Run(op.name+"/"+path, func(b *testing.B) {
				be := redistest.Real(b)
				s := taskstate.New(be.Client, taskstate.Options{Prefix: be.Prefix, NoFunctions: path == "evalsha"})
				call := op.prep(b, s, b.N)
				calls0, usec0 := redistest.CommandStats(b, be.Client, "eval", "evalsha", "fcall")
				b.ResetTimer()
				for i := range b.N {
					if err := call(i); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				calls, usec := redistest.CommandStats(b, be.Client, "eval", "evalsha", "fcall")
				if calls == calls0 {
					b.Fatal("no script calls counted")
				}
				b.ReportMetric(float64(usec-usec0)/float64(calls-calls0), "redis-µs/call")
				b.ReportMetric(float64(calls-calls0)/float64(b.N), "calls/op")
			})
		}
	}
}
