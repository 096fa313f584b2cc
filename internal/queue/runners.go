package queue

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/hibiken/asynq"
)

// A delivery runs on a goroutine that outlives it (docs/benchmarks.md,
// "The worker's stacks").
//
// asynq runs each job's handler on a new goroutine, whose stack starts at
// Go's minimum (8 KiB). A delivery's path (the handler, then the claim and
// the outcome through go-redis down to the network poller) needs more, so
// each job grew its goroutine's stack, copying it, before its first round
// trip: 6 % of a worker's CPU in a drain of no-op jobs. A runner keeps the
// stack it grew from job to job; asynq's goroutine only hands the job over
// and waits for it.
//
// Runners are started on demand, when a job finds none idle, so there are
// as many as jobs ever ran at once (a server's Concurrency); a runner is
// idle again before its job's answer is out, and the one idle last is
// handed the next job (its stack and caches warmest). They end with stop.

// runners runs deliveries (run) on goroutines kept from job to job.
type runners struct {
	run func(ctx context.Context, t *asynq.Task) error
	log *slog.Logger

	mu      sync.Mutex
	idle    []*runner // a stack: the one idle last on top
	stopped bool
	// started counts the runners started (tests).
	started atomic.Int64
}

// runner is one runner goroutine's inbox.
type runner struct{ in chan *runJob } // cap 1; closed by stop

// runJob is one delivery handed to a runner, and its answer.
type runJob struct {
	ctx  context.Context
	t    *asynq.Task
	err  error
	done chan struct{} // cap 1: the answer is in err
}

var runJobs = sync.Pool{New: func() any { return &runJob{done: make(chan struct{}, 1)} }}

func newRunners(run func(ctx context.Context, t *asynq.Task) error, log *slog.Logger) *runners {
	return &runners{run: run, log: log}
}

// deliver is the asynq handler: it runs the job on an idle runner, or on
// a new one, and returns its error.
func (p *runners) deliver(ctx context.Context, t *asynq.Task) error {
	j := runJobs.Get().(*runJob)
	j.ctx, j.t = ctx, t
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		r := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		r.in <- j
	} else {
		p.mu.Unlock()
		p.started.Add(1)
		go p.loop(&runner{in: make(chan *runJob, 1)}, j)
	}
	<-j.done
	err := j.err
	j.ctx, j.t, j.err = nil, nil, nil
	runJobs.Put(j)
	return err
}

// loop runs j, then every job r is handed, until stop.
func (p *runners) loop(r *runner, j *runJob) {
	for {
		j.err = p.safely(j.ctx, j.t)
		p.mu.Lock()
		stopped := p.stopped
		if !stopped {
			p.idle = append(p.idle, r)
		}
		p.mu.Unlock()
		j.done <- struct{}{}
		if stopped {
			return
		}
		var ok bool
		if j, ok = <-r.in; !ok {
			return
		}
	}
}

// safely is run with a panic turned into the job's error, as asynq does
// for a handler on its own goroutine (the job is retried); here a panic
// would end the process.
func (p *runners) safely(ctx context.Context, t *asynq.Task) (err error) {
	defer func() {
		if x := recover(); x != nil {
			p.log.Error("job delivery panicked: the job is retried", "panic", x, "stack", string(debug.Stack()))
			err = fmt.Errorf("queue: job delivery panicked: %v", x)
		}
	}()
	return p.run(ctx, t)
}

// stop ends the idle runners, and each busy one once its job is done; a
// job delivered after it runs on a runner of its own.
func (p *runners) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	for _, r := range p.idle {
		close(r.in)
	}
	p.idle = nil
}
