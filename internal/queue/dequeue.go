package queue

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// An idle worker learns of a new job by a wake-up, not by polling
// (docs/reliability.md, "Job pickup").
//
// asynq's processor dequeues with one script call per queue of its server
// (asynq v0.26.0 rdb.Dequeue, one goroutine per server) and, when every
// queue came back empty, sleeps TaskCheckInterval/2 + rand(TaskCheckInterval)
// before it looks again; it has no way to be woken. So each asynq server
// gets its Redis client through a wakeClient, which sees those calls: after
// a sweep in which every queue of the server came back empty, it holds the
// last call for up to waiter.hold, until a wake-up for one of the queues
// arrives (the front end publishes Keys.Wake in its create pipeline, after
// the job: capture.go; other enqueues through waking.go), then runs that queue's dequeue and answers asynq with it, as if
// asynq had found the job itself. After hold it answers "empty" and asynq
// sleeps as usual: its poll is the backstop for a wake-up that was lost
// (subscription down, Redis restarted, publish failed).
//
// Sizing (pollTiming): hold plus asynq's longest sleep equals the longest
// sleep of the old poll, 1.5 × ServeConfig.TaskCheckInterval, so a lost wake-up
// delays a job no more than before; asynq's own sleep is short, since a
// wake-up during it waits for its end; and an idle server runs fewer
// dequeue sweeps per second than before (one per hold + mean sleep,
// 29.5 ms by default, against 20 ms).
//
// This leans on asynq internals (the dequeue script, its keys and answer,
// and that one goroutine per server calls it); TestWakeDeliversWithoutPolling
// (server_test.go) pins them: with an hour's poll, only the wake path
// delivers its job. If asynq changes them, calls pass through unchanged
// and asynq polls alone.

// asynqDequeueSHA is the SHA-1 of asynq v0.26.0's dequeue script
// (internal/rdb dequeueCmd). KEYS: the queue's pending list, paused flag,
// active list and lease set; ARGV: the lease's expiry (unix seconds) and
// the queue's task key prefix. Answer: the job's message, or nil when the
// queue is empty.
const asynqDequeueSHA = "a8153319360adc71cdc370107f8ab9786f204765"

// asynqLease is asynq v0.26.0's lease of a dequeued job (rdb.LeaseDuration).
const asynqLease = 30 * time.Second

// maxHold caps a hold: asynq counts the lease of the job a hold returns
// from before the hold, and renews it every 5 s while it is valid (its
// heartbeater), so 10 s of it must be left.
const maxHold = asynqLease * 2 / 3

// pollTiming splits the worst-case pickup delay of a lost wake-up, 1.5 ×
// interval (the old poll's longest sleep), into a hold and the
// TaskCheckInterval asynq sleeps with after it, hold + 1.5 × asynqInterval
// = 1.5 × interval. A wake-up that arrives while asynq sleeps waits for the
// sleep's end, so the sleep is short (a twentieth of interval: 0.5–1.5 ms
// by default) and the hold takes the rest (28.5 ms), up to maxHold.
func pollTiming(interval time.Duration) (hold, asynqInterval time.Duration) {
	asynqInterval = max(interval/20, 1)
	hold = (interval - asynqInterval) * 3 / 2
	if hold > maxHold {
		hold = maxHold
		asynqInterval = (interval*3/2 - hold) * 2 / 3
	}
	return hold, asynqInterval
}

// waiter is one asynq server's side of the wake path: the wake-ups of its
// queues, and the sweep its processor is in.
type waiter struct {
	hold time.Duration
	// index numbers the server's asynq queues; caps holds, by index, the
	// most jobs of one principal that run on each at once (0: no cap).
	index map[string]int
	caps  []int
	// onHold counts servers waiting for a wake-up, delivered the jobs a
	// wake-up delivered (metrics).
	onHold    func(delta float64)
	delivered func()

	mu sync.Mutex
	// woken marks, by index, a queue that got a wake-up since its last
	// dequeue was sent.
	woken   []bool
	stopped bool
	signal  chan struct{} // cap 1: a wake-up, or release
	stop    chan struct{} // closed by release

	// The current sweep, touched only by the server's processor goroutine:
	// which queues came back empty, and each one's dequeue call.
	empty  []bool
	nEmpty int
	calls  []dequeueCall
}

type dequeueCall struct {
	keys []string
	args []any
}

func newWaiter(hold time.Duration, queues []string, caps []int, onHold func(float64), delivered func()) *waiter {
	wt := &waiter{hold: hold, index: make(map[string]int, len(queues)), caps: caps, onHold: onHold, delivered: delivered,
		woken: make([]bool, len(queues)), signal: make(chan struct{}, 1), stop: make(chan struct{}),
		empty: make([]bool, len(queues)), calls: make([]dequeueCall, len(queues))}
	for i, q := range queues {
		wt.index[q] = i
	}
	return wt
}

// wake records a wake-up of asynq queue q and signals a hold, never blocking.
func (wt *waiter) wake(q string) {
	i, ok := wt.index[q]
	if !ok {
		return
	}
	wt.mu.Lock()
	wt.woken[i] = true
	wt.mu.Unlock()
	select {
	case wt.signal <- struct{}{}:
	default:
	}
}

// release ends the hold in progress and every later one at once: asynq's
// Stop waits for the processor's dequeue to return.
func (wt *waiter) release() {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if !wt.stopped {
		wt.stopped = true
		close(wt.stop)
	}
}

// sent clears queue i's wake-up before its dequeue is sent: the dequeue
// answers for every job enqueued before it.
func (wt *waiter) sent(i int) bool {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	wt.woken[i] = false
	return wt.stopped
}

// next takes a queue that was woken, or -1.
func (wt *waiter) next() int {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	for i, w := range wt.woken {
		if w {
			wt.woken[i] = false
			return i
		}
	}
	return -1
}

// resetSweep starts a new sweep.
func (wt *waiter) resetSweep() {
	clear(wt.empty)
	wt.nEmpty = 0
}

// wakeClient is the Redis client of one asynq server: rdb, with the
// server's dequeue calls run as fair_dequeue.lua (fair.go) and held while
// its queues are empty.
type wakeClient struct {
	redis.UniversalClient
	w     *waiter
	ahead *doneAhead
}

// EvalSha runs a script call, holding a dequeue call that ends an empty
// sweep, and answering a done call that ran beside its job's outcome (done.go).
func (c *wakeClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if cmd := c.ahead.answerDone(ctx, sha, keys); cmd != nil {
		return cmd
	}
	if sha != asynqDequeueSHA {
		return c.UniversalClient.EvalSha(ctx, sha, keys, args...)
	}
	return c.dequeue(ctx, keys, args, func() *redis.Cmd { return c.UniversalClient.EvalSha(ctx, sha, keys, args...) })
}

// Eval runs a script call as EvalSha does (go-redis sends the source after
// a NOSCRIPT).
func (c *wakeClient) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	sum := sha1.Sum([]byte(src))
	if hex.EncodeToString(sum[:]) != asynqDequeueSHA {
		return c.UniversalClient.Eval(ctx, src, keys, args...)
	}
	return c.dequeue(ctx, keys, args, func() *redis.Cmd { return c.UniversalClient.Eval(ctx, src, keys, args...) })
}

// fair runs fair_dequeue.lua for queue i with the keys and arguments of
// asynq's dequeue call, sending its source after a NOSCRIPT (the first
// call after a start or a Redis restart, a SCRIPT FLUSH).
func (c *wakeClient) fair(ctx context.Context, i int, keys []string, args []any) *redis.Cmd {
	argv := fairDequeueArgs(args, time.Now(), c.w.caps[i])
	cmd := c.UniversalClient.EvalSha(ctx, fairDequeue.Hash(), keys, argv...)
	if isNoScript(cmd.Err()) {
		cmd = c.UniversalClient.Eval(ctx, fairDequeueSrc, keys, argv...)
	}
	return cmd
}

// dequeue runs one dequeue call of asynq's sweep, as fair_dequeue.lua, and
// after the last queue of a sweep in which all came back empty, holds it.
// A call of another shape goes out unchanged (asynq's, by send).
func (c *wakeClient) dequeue(ctx context.Context, keys []string, args []any, send func() *redis.Cmd) *redis.Cmd {
	wt := c.w
	i, ok := -1, len(keys) == 4 && len(args) == 2
	if ok {
		q, _ := pendingQueue(keys[0])
		i, ok = wt.index[q]
	}
	if !ok {
		return send()
	}
	stopped := wt.sent(i)
	cmd := c.fair(ctx, i, keys, args)
	if cmd.Err() == redis.Nil && stopped {
		cmd.SetErr(errReleased)
	}
	if cmd.Err() != redis.Nil {
		wt.resetSweep()
		return cmd
	}
	if !wt.empty[i] {
		wt.empty[i] = true
		wt.nEmpty++
	}
	wt.calls[i] = dequeueCall{keys: keys, args: args}
	if wt.nEmpty < len(wt.empty) {
		return cmd
	}
	wt.resetSweep()
	switch res, err := c.hold(ctx); {
	case err != nil:
		cmd.SetErr(err)
	case res != nil:
		cmd.SetErr(nil)
		cmd.SetVal(res)
	}
	return cmd
}

// errReleased answers a dequeue once the worker stops: an error, not
// "empty", so that asynq's processor does not sleep before it stops.
var errReleased = errors.New("mcpq worker stopping: dequeue released")

// hold waits up to hold for a wake-up of the server's queues and runs the
// woken queue's dequeue again. It returns the job it found, nil when the
// hold ran out, or errReleased.
func (c *wakeClient) hold(ctx context.Context) (res any, err error) {
	wt := c.w
	t := time.NewTimer(wt.hold)
	defer t.Stop()
	wt.onHold(1)
	defer wt.onHold(-1)
	for {
		for i := wt.next(); i >= 0; i = wt.next() {
			call := wt.calls[i]
			args := []any{time.Now().Add(asynqLease).Unix(), call.args[1]} // the lease from now
			if cmd := c.fair(ctx, i, call.keys, args); cmd.Err() == nil {
				wt.delivered()
				return cmd.Val(), nil
			}
			// Empty (another worker took it), or an error: asynq learns
			// of neither, its next sweep (after its sleep) will.
		}
		select {
		case <-wt.signal:
		case <-wt.stop:
			return nil, errReleased
		case <-t.C:
			return nil, nil
		}
	}
}
