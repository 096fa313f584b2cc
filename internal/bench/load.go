// Package bench is mcpq's side-by-side benchmark harness (issue 6): it
// measures mcpq's front end and worker against the layers beneath them
// (raw asynq, minimal net/http handlers on the same Redis) and against the
// official Go SDK's stateless server, in one run, and reports ratios.
//
// The servers under test run as child processes of the harness binary
// (Serve runs one role), so each has its own resident memory, CPU time and
// pprof endpoint; the harness process is the load generator. Nothing here
// is part of mcpq's runtime, and scripts/test never runs it.
package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Stats is the outcome of one load run.
type Stats struct {
	// Concurrency is the number of load goroutines.
	Concurrency int `json:"concurrency"`
	// Window is the measured window (after warm-up).
	Window time.Duration `json:"windowNs"`
	// Ops counts operations that started and ended inside the window.
	Ops int64 `json:"ops"`
	// Total counts every successful operation, warm-up included.
	Total int64 `json:"total"`
	// Errors counts failed operations (any time).
	Errors int64 `json:"errors"`
	// FirstError is the first failure's text.
	FirstError string `json:"firstError,omitempty"`
	// Throughput is Ops per second of Window.
	Throughput float64 `json:"throughput"`
	// Latency percentiles of the counted operations.
	P50 time.Duration `json:"p50Ns"`
	P90 time.Duration `json:"p90Ns"`
	P99 time.Duration `json:"p99Ns"`
	Max time.Duration `json:"maxNs"`
}

// Op is one operation of a load goroutine.
type Op func(ctx context.Context) error

// NewOp makes goroutine i's operation and a func that releases it.
type NewOp func(i int) (Op, func(), error)

// maxSamples bounds the latency samples kept per goroutine.
const maxSamples = 1 << 20

// Load runs conc goroutines calling their op back to back for warmup+dur.
// Only operations that start after the warm-up and end before the window
// closes are counted (a closed loop: each goroutine has one request in
// flight).
func Load(ctx context.Context, conc int, warmup, dur time.Duration, newOp NewOp) (Stats, error) {
	ops := make([]Op, conc)
	closers := make([]func(), 0, conc)
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for i := range conc {
		op, closeFn, err := newOp(i)
		if err != nil {
			return Stats{}, err
		}
		ops[i] = op
		if closeFn != nil {
			closers = append(closers, closeFn)
		}
	}
	start := time.Now()
	from, to := start.Add(warmup), start.Add(warmup+dur)
	var (
		wg       sync.WaitGroup
		errs     atomic.Int64
		total    atomic.Int64
		errOnce  sync.Once
		firstErr string
		lat      = make([][]time.Duration, conc)
	)
	for i := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			samples := make([]time.Duration, 0, 4096)
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(to) {
					break
				}
				err := ops[i](ctx)
				t1 := time.Now()
				if err != nil {
					errs.Add(1)
					errOnce.Do(func() { firstErr = err.Error() })
					if errs.Load() > 1000 {
						break
					}
					continue
				}
				total.Add(1)
				if !t0.Before(from) && !t1.After(to) && len(samples) < maxSamples {
					samples = append(samples, t1.Sub(t0))
				}
			}
			lat[i] = samples
		}()
	}
	wg.Wait()
	var all []time.Duration
	for _, s := range lat {
		all = append(all, s...)
	}
	st := Stats{Concurrency: conc, Window: dur, Ops: int64(len(all)), Errors: errs.Load(), FirstError: firstErr,
		Total: total.Load()}
	st.Throughput = float64(st.Ops) / dur.Seconds()
	st.P50, st.P90, st.P99, st.Max = percentiles(all)
	if st.Ops == 0 {
		return st, fmt.Errorf("no operation succeeded in the window (%d errors; first: %s)", st.Errors, firstErr)
	}
	return st, ctx.Err()
}

// percentiles sorts d and returns its p50, p90, p99 and maximum.
func percentiles(d []time.Duration) (p50, p90, p99, pmax time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	at := func(q float64) time.Duration {
		i := int(q*float64(len(d))+0.5) - 1
		return d[max(0, min(i, len(d)-1))]
	}
	return at(0.50), at(0.90), at(0.99), d[len(d)-1]
}

// latencyStats summarises a sample of latencies (for measurements that are
// not closed loops).
func latencyStats(d []time.Duration) Stats {
	st := Stats{Ops: int64(len(d)), Concurrency: 1}
	st.P50, st.P90, st.P99, st.Max = percentiles(d)
	return st
}
