package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// TestCancelDuringStep: a cancel request arriving while a step blocks on its
// context cancels that context promptly and the task ends cancelled, however
// the handler passes the news on.
func TestCancelDuringStep(t *testing.T) {
	cases := []struct {
		name string
		// step is the blocking step's result once its context is done.
		step func(ctx context.Context) error
		// after gets the blocking Step's error and ends the handler.
		after func(ctx context.Context, c *worker.Call, stepErr error, extra *atomic.Int64) (*proto.CallToolResult, error)
	}{
		{
			name: "step returns ctx error, handler returns Step's error",
			step: func(ctx context.Context) error { return ctx.Err() },
			after: func(_ context.Context, _ *worker.Call, err error, _ *atomic.Int64) (*proto.CallToolResult, error) {
				return nil, err
			},
		},
		{
			name: "step swallows the cancel, Step still says cancelled",
			step: func(context.Context) error { return nil },
			after: func(_ context.Context, _ *worker.Call, err error, _ *atomic.Int64) (*proto.CallToolResult, error) {
				if !errors.Is(err, worker.ErrCancelled) {
					return worker.TextResult(fmt.Sprintf("Step returned %v, want ErrCancelled", err)), nil
				}
				return nil, err
			},
		},
		{
			name: "a later Step does not run its function",
			step: func(ctx context.Context) error { return ctx.Err() },
			after: func(ctx context.Context, c *worker.Call, _ error, extra *atomic.Int64) (*proto.CallToolResult, error) {
				return nil, c.Step(ctx, func(context.Context) error { extra.Add(1); return nil })
			},
		},
		{
			name: "wrapped ErrCancelled",
			step: func(ctx context.Context) error { return ctx.Err() },
			after: func(_ context.Context, _ *worker.Call, err error, _ *atomic.Int64) (*proto.CallToolResult, error) {
				return nil, fmt.Errorf("frame 3: %w", err)
			},
		},
		{
			name: "handler's own error after a cancel",
			step: func(ctx context.Context) error { return ctx.Err() },
			after: func(context.Context, *worker.Call, error, *atomic.Int64) (*proto.CallToolResult, error) {
				return nil, errors.New("gave up")
			},
		},
	}
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		type probe struct {
			started  chan struct{}
			observed chan error
			calls    counter
			extra    atomic.Int64
		}
		probes := make([]*probe, len(cases))
		tools := make([]worker.Tool, len(cases))
		for i, tc := range cases {
			p := &probe{started: make(chan struct{}, 1), observed: make(chan error, 1)}
			probes[i] = p
			tools[i] = h.tool(fmt.Sprintf("cancel%d", i), p.calls.wrap(func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
				err := c.Step(ctx, func(ctx context.Context) error {
					select {
					case p.started <- struct{}{}:
					default:
					}
					<-ctx.Done()
					select {
					case p.observed <- ctx.Err():
					default:
					}
					return tc.step(ctx)
				})
				return tc.after(ctx, c, err, &p.extra)
			}))
		}
		h.start(t, h.config(), tools...)
		for i, tc := range cases {
			p := probes[i]
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				tk := h.submit(t, tools[i].Name, `{}`)
				recv(t, p.started, "step start")
				t0 := time.Now()
				if err := h.store.RequestCancel(context.Background(), tk.ref); err != nil {
					t.Fatalf("RequestCancel: %v", err)
				}
				if rec := h.get(t, tk.ref); !rec.CancelRequested {
					t.Errorf("cancel flag not set after RequestCancel: %+v", rec)
				}
				if err := recv(t, p.observed, "step context cancellation"); !errors.Is(err, context.Canceled) {
					t.Errorf("step context error = %v, want context.Canceled", err)
				}
				t.Logf("step saw its context cancelled %v after RequestCancel", time.Since(t0))
				rec := h.terminal(t, tk)
				if rec.Status != proto.StatusCancelled || rec.StatusMessage != "Cancelled" {
					t.Fatalf("got %s %q (result %s), want cancelled \"Cancelled\"", rec.Status, rec.StatusMessage, rec.Result)
				}
				if len(rec.Result) != 0 || rec.Error != nil {
					t.Errorf("cancelled task has result %s / error %+v", rec.Result, rec.Error)
				}
				if n := p.calls.n.Load(); n != 1 {
					t.Errorf("handler ran %d times, want 1", n)
				}
				if n := p.extra.Load(); n != 0 {
					t.Errorf("a Step function ran %d times after the cancel", n)
				}
			})
		}
	})
}

// TestCancelBeforeClaim: a job whose task was cancelled before a worker
// claimed it does not run the handler.
func TestCancelBeforeClaim(t *testing.T) {
	cases := []struct {
		name string
		// lostAttempt: an earlier delivery claimed the task and vanished, so
		// the cancel only sets the flag and the next claim settles it.
		lostAttempt bool
		wantMessage string
		wantAttempt int64
	}{
		{name: "queued task", wantMessage: "Cancelled", wantAttempt: 0},
		{name: "task of a lost worker", lostAttempt: true, wantMessage: "Cancelled", wantAttempt: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := mini(t)
			var calls counter
			cfg := h.config()
			cfg.Concurrency = 1
			h.start(t, cfg, h.tool("job", calls.wrap(func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
				return worker.TextResult("ran"), nil
			})))
			ctx := context.Background()
			tk := h.create(t, "job", `{}`)
			if tc.lostAttempt {
				if _, err := h.store.Claim(ctx, tk.ref, 0, taskstate.Share{}); err != nil {
					t.Fatalf("Claim: %v", err)
				}
			}
			if err := h.store.RequestCancel(ctx, tk.ref); err != nil {
				t.Fatalf("RequestCancel: %v", err)
			}
			h.enqueue(t, tk, "job", "")
			h.barrier(t)
			rec := h.terminal(t, tk)
			if rec.Status != proto.StatusCancelled || rec.StatusMessage != tc.wantMessage || rec.Attempt != tc.wantAttempt {
				t.Errorf("got %s %q attempt %d, want cancelled %q attempt %d",
					rec.Status, rec.StatusMessage, rec.Attempt, tc.wantMessage, tc.wantAttempt)
			}
			if n := calls.n.Load(); n != 0 {
				t.Errorf("handler ran %d times, want 0", n)
			}
		})
	}
}

// TestRedeliveredTerminalJobIsNoop: a second delivery of a finished task's
// job (asynq retry, duplicate enqueue) runs nothing and writes nothing.
func TestRedeliveredTerminalJobIsNoop(t *testing.T) {
	cases := []struct {
		mode string
		want proto.TaskStatus
	}{
		{"result", proto.StatusCompleted},
		{"tool error", proto.StatusCompleted},
		{"protocol error", proto.StatusFailed},
		{"cancel", proto.StatusCancelled},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			h := mini(t)
			var calls counter
			started := make(chan struct{}, 2)
			cfg := h.config()
			cfg.Concurrency = 1
			h.start(t, cfg, h.tool("job", calls.wrap(func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
				var a struct{ Mode string }
				if err := c.Bind(&a); err != nil {
					return nil, err
				}
				switch a.Mode {
				case "tool error":
					return nil, errors.New("tool error")
				case "protocol error":
					return nil, proto.NewError(proto.CodeInternalError, "protocol error")
				case "cancel":
					return nil, c.Step(ctx, func(ctx context.Context) error {
						started <- struct{}{}
						<-ctx.Done()
						return ctx.Err()
					})
				}
				return worker.TextResult("result"), nil
			})))
			args, _ := json.Marshal(map[string]string{"mode": tc.mode})
			tk := h.submit(t, "job", string(args))
			if tc.mode == "cancel" {
				recv(t, started, "step start")
				if err := h.store.RequestCancel(context.Background(), tk.ref); err != nil {
					t.Fatal(err)
				}
			}
			before := h.terminal(t, tk)
			if before.Status != tc.want {
				t.Fatalf("first delivery ended %s, want %s", before.Status, tc.want)
			}
			h.enqueue(t, tk, "job", tk.ref.ID+"#0") // job 0 again, under an id asynq takes twice
			h.barrier(t)
			if n := calls.n.Load(); n != 1 {
				t.Errorf("handler ran %d times, want 1", n)
			}
			if after := h.get(t, tk.ref); !reflect.DeepEqual(after, before) {
				t.Errorf("record changed by the re-delivery:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

// TestFencing: once a newer attempt claimed the task, nothing the older
// attempt does reaches the record; the task ends with the newer attempt's
// outcome.
func TestFencing(t *testing.T) {
	cases := []struct {
		name string
		// after runs in attempt 1 once its blocking step was released (after
		// attempt 2 claimed the task) and returns attempt 1's outcome; it
		// reports what the runtime told it on report.
		after func(ctx context.Context, c *worker.Call, report chan<- error) (*proto.CallToolResult, error)
		// newerFinishesFirst: attempt 2 ends the task while attempt 1 still
		// blocks in its step, which must then be cancelled.
		newerFinishesFirst bool
	}{
		{
			name: "stale Progress then a result",
			after: func(ctx context.Context, c *worker.Call, report chan<- error) (*proto.CallToolResult, error) {
				report <- c.Progress(ctx, "progress from attempt 1")
				return worker.TextResult("result of attempt 1"), nil
			},
		},
		{
			name: "stale Step",
			after: func(ctx context.Context, c *worker.Call, report chan<- error) (*proto.CallToolResult, error) {
				ran := false
				err := c.Step(ctx, func(context.Context) error { ran = true; return nil })
				if ran {
					err = errors.New("stale Step ran its function")
				}
				report <- err
				return nil, err
			},
		},
		{
			name: "stale tool error",
			after: func(_ context.Context, _ *worker.Call, report chan<- error) (*proto.CallToolResult, error) {
				report <- errors.New("attempt 1 failed")
				return nil, errors.New("attempt 1 failed")
			},
		},
		{
			name: "stale protocol error",
			after: func(_ context.Context, _ *worker.Call, report chan<- error) (*proto.CallToolResult, error) {
				report <- errors.New("attempt 1 failed")
				return nil, proto.NewError(proto.CodeInternalError, "attempt 1 failed")
			},
		},
		{name: "newer attempt finishes first", newerFinishesFirst: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := mini(t)
			ctx := context.Background()
			started := make(chan int64, 1)
			release := make(chan struct{})
			stepErr := make(chan error, 1)
			report := make(chan error, 1)
			cfg := h.config()
			cfg.Concurrency = 1
			h.start(t, cfg, h.tool("job", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
				err := c.Step(ctx, func(ctx context.Context) error {
					started <- c.Attempt
					select {
					case <-release:
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				})
				stepErr <- err
				if err != nil {
					return nil, err
				}
				return tc.after(ctx, c, report)
			}))
			tk := h.submit(t, "job", `{}`)
			if a := recv(t, started, "attempt 1 start"); a != 1 {
				t.Fatalf("worker attempt = %d, want 1", a)
			}
			// A re-delivery elsewhere: only a holder the store cannot judge
			// (no worker named, as an older mcpq claims) loses a task to a
			// second delivery; a live worker keeps it (taskstate/catalog/leases.go).
			if err := h.b.Client.HDel(ctx, h.store.Keys().Task(tk.ref), "worker").Err(); err != nil {
				t.Fatal(err)
			}
			claim, err := h.store.Claim(ctx, tk.ref, 0, taskstate.Share{})
			if err != nil || claim.Attempt != 2 {
				t.Fatalf("second Claim = %+v, %v; want attempt 2", claim, err)
			}
			result2 := json.RawMessage(`{"resultType":"complete","content":[{"type":"text","text":"result of attempt 2"}]}`)
			finish2 := func() {
				t.Helper()
				err := h.store.Finish(ctx, tk.ref, 2, taskstate.Outcome{Status: proto.StatusCompleted,
					Result: result2, StatusMessage: "Completed by attempt 2"})
				if err != nil {
					t.Fatalf("attempt 2 Finish: %v (attempt 1 wrote first?)", err)
				}
			}
			if tc.newerFinishesFirst {
				finish2()
				if err := recv(t, stepErr, "attempt 1 step end"); err == nil {
					t.Errorf("attempt 1's step returned nil after attempt 2 ended the task")
				}
			} else {
				close(release)
				if err := recv(t, stepErr, "attempt 1 step end"); err != nil {
					t.Fatalf("attempt 1's released step: %v", err)
				}
				if err := recv(t, report, "attempt 1 report"); err == nil || errors.Is(err, worker.ErrCancelled) {
					t.Errorf("attempt 1 was told %v, want a non-cancel stop", err)
				}
			}
			h.barrier(t) // attempt 1's delivery is over
			if !tc.newerFinishesFirst {
				rec := h.get(t, tk.ref)
				if rec.Status != proto.StatusWorking || rec.Attempt != 2 || rec.StatusMessage != "Running (attempt 2)" ||
					len(rec.Result) != 0 || rec.Error != nil {
					t.Fatalf("attempt 1 wrote to the record: %+v", rec)
				}
				finish2()
			}
			rec := h.get(t, tk.ref)
			if rec.Status != proto.StatusCompleted || rec.StatusMessage != "Completed by attempt 2" || rec.Attempt != 2 {
				t.Errorf("final record: %s %q attempt %d, want attempt 2's outcome", rec.Status, rec.StatusMessage, rec.Attempt)
			}
			jsonEqual(t, rec.Result, string(result2))
		})
	}
}
