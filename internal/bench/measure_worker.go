package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/taskstate"
)

// workerThroughput (group 5) drains WorkerJobs pre-enqueued no-op jobs with
// a bare asynq server and the same number of no-op tasks with mcpq's
// worker, at each concurrency, and compares jobs per second from the first
// job handled to the last. Like groups 1 to 4 it runs in Config.Rounds
// rounds, each a raw asynq drain then an mcpq drain (each drain with a
// fresh Redis and a fresh worker child, both sides alike), and reports
// medians: the median of the per-round ratios, the median round's CPU per
// job (rounds.go).
func (s *suite) workerThroughput(ctx context.Context) error {
	n := s.cfg.WorkerJobs
	for _, c := range s.cfg.Concurrency {
		var raws, mqs []*Row
		for r := range s.cfg.Rounds {
			raw, err := s.drain(ctx, RoleAsynqWorker, c, n, func() error { return s.preloadAsynq(ctx, n) })
			if err != nil {
				return fmt.Errorf("raw asynq c=%d: %w", c, err)
			}
			raw.Group, raw.Figure = "5", fmt.Sprintf("raw asynq no-op jobs c=%d", c)
			s.roundDone(r, raw)
			raws = append(raws, raw)
			mq, err := s.drain(ctx, RoleWorker, c, n, func() error {
				_, err := s.createTasks(ctx, n, 64, true)
				return err
			})
			if err != nil {
				return fmt.Errorf("mcpq worker c=%d: %w", c, err)
			}
			mq.Group, mq.Figure = "5", fmt.Sprintf("mcpq worker no-op tool c=%d", c)
			s.roundDone(r, mq)
			mqs = append(mqs, mq)
		}
		s.rep.add(combine(raws))
		mq := combine(mqs)
		mq.compareRows(mqs, raws, &Target{"ratio>=", 0.7})
		s.rep.add(mq)
	}
	return nil
}

// drain flushes Redis, preloads jobs, starts a worker child of role with
// concurrency c (and the extra flags) and waits until it handled n jobs.
func (s *suite) drain(ctx context.Context, role string, c, n int, preload func() error, extra ...string) (*Row, error) {
	if err := s.flush(ctx); err != nil {
		return nil, err
	}
	if err := preload(); err != nil {
		return nil, err
	}
	w, err := s.spawn(ctx, role, append([]string{"-concurrency", strconv.Itoa(c)}, extra...)...)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	probe := startProbe(ctx, s.rdb, w)
	var before childCount // jobs handled before the probe started are not charged to it
	if err := w.getJSON("/count", &before); err != nil {
		return nil, err
	}
	var m0, m1 childStats
	if err := w.getJSON("/stats", &m0); err != nil {
		return nil, err
	}
	var stop func() *memory
	if role == RoleWorker && c == s.maxConc() {
		stop = sampleMemory(w)
	}
	deadline := time.Now().Add(max(60*time.Second, 20*s.cfg.Duration))
	var cnt childCount
	for {
		if err := w.getJSON("/count", &cnt); err != nil {
			return nil, err
		}
		if cnt.Handled >= int64(n) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cpu := probe.end(ctx, cnt.Handled-before.Handled)
	if err := w.getJSON("/stats", &m1); err != nil {
		return nil, err
	}
	if stop != nil {
		keepMax(&s.wkLoad, stop())
	}
	if cnt.Handled < 2 {
		return nil, fmt.Errorf("only %d of %d jobs handled", cnt.Handled, n)
	}
	span := time.Duration(cnt.LastNs - cnt.FirstNs)
	rate := float64(cnt.Handled-1) / span.Seconds()
	var issue string
	if cnt.Handled < int64(n) {
		issue = fmt.Sprintf("timed out: %d of %d", cnt.Handled, n)
	}
	// The child's /count and /stats polls allocate too, a few hundred
	// objects each 10 ms: under 1 % of a drain's.
	allocs := float64(m1.Mallocs-m0.Mallocs) / float64(max(cnt.Handled-before.Handled, 1))
	detail := fmt.Sprintf("%d jobs in %.2f s; per job: worker %.0f µs of CPU and %.0f allocations, redis %.0f µs", cnt.Handled,
		span.Seconds(), cpu.ServerUsPerOp, allocs, cpu.RedisUsPerOp)
	return &Row{Value: rate, Unit: "jobs/s", CPU: &cpu, Note: strings.Join(nonEmpty(detail, issue), "; "),
		detail: detail, issue: issue, allocs: allocs}, nil
}

// preloadAsynq enqueues n no-op jobs for the bare asynq worker, shaped like
// mcpq's (type, payload size, options).
func (s *suite) preloadAsynq(ctx context.Context, n int) error {
	enq := asynq.NewClientFromRedisClient(s.rdb)
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for int(next.Add(1)) <= n && ctx.Err() == nil {
				ref := taskstate.Ref{Owner: anonymousOwner, ID: taskstate.NewID()}
				_, err := enq.EnqueueContext(ctx, asynq.NewTask(queue.Type, queue.Payload(queue.Job{Ref: ref, Tool: toolNoop})),
					asynq.TaskID(ref.ID), asynq.Queue(floorQueue), asynq.MaxRetry(queue.MaxRetry), asynq.Timeout(jobTimeout))
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}
