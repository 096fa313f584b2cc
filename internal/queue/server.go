package queue

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/propagation"

	"github.com/mcpq/mcpq/taskstate/events"
)

// The asynq servers a worker runs: their queues, their Redis clients
// (dequeue.go: held dequeues, woken by Keys.Wake), the delivery of a
// decoded Job to the worker, and their logger.

// ServeConfig configures the asynq servers of one worker.
type ServeConfig struct {
	// Redis is the worker's Redis client.
	Redis redis.UniversalClient
	// Keys names the queues and their wake channels.
	Keys Keys
	// Hub carries the wake-ups of the queues served.
	Hub *events.Hub
	// Groups are the servers, one per group: asynq has one concurrency
	// per server, so a group's burst never takes another group's slots.
	Groups []Group
	// Caps is, by mcpq queue name ("*": every queue not named), the most
	// jobs of one principal that a dequeue lets run on the queue at once
	// (fair.go); a principal at it is passed over while it waits. Empty
	// or 0: no cap, every free slot may go to any waiting principal.
	Caps map[string]int
	// Shards splits queues into shards (shards.go): each server serves
	// every shard of its queues, these and any other asynq has seen a job
	// on (asynq:queues) when it starts, so no job a front end of another
	// count put on a shard is left unserved (docs/deploy.md, "Queue
	// shards"). asynq picks among a server's queues at random on each
	// dequeue, all at one priority, so no shard starves. A cap holds per
	// shard at dequeue; the claim counts the principal's tasks on the whole
	// queue (taskstate.Share), so the cap holds across shards.
	Shards Shards
	// ShardCheck is how often the servers look for a shard of their
	// queues that appeared after they started (a front end of a higher
	// count) and log an error naming it: they do not serve it until the
	// worker restarts. Default 30 s.
	ShardCheck time.Duration
	// TaskCheckInterval bounds the pickup of a job whose wake-up was lost
	// to 1.5 × TaskCheckInterval, as polling alone would (pollTiming).
	TaskCheckInterval time.Duration
	// DelayedCheck is how often the servers move due delayed jobs
	// (Client.EnqueueIn) and retries to their queue (0: asynq's 5 s).
	DelayedCheck time.Duration
	// ShutdownTimeout is how long running jobs get on Stop before asynq
	// puts them back in their queue.
	ShutdownTimeout time.Duration
	// Logger receives asynq's warnings and the jobs dropped as undecodable.
	Logger *slog.Logger
	// Holding hears +1 when a server starts holding a dequeue for a
	// wake-up (its queues are empty) and -1 when it stops; Woken hears of
	// each job a wake-up delivered. Either may be nil.
	Holding func(delta float64)
	Woken   func()
}

// cap is Caps's entry for mcpq queue q.
func (cfg ServeConfig) cap(q string) int {
	if n, ok := cfg.Caps[q]; ok {
		return max(n, 0)
	}
	return max(cfg.Caps["*"], 0)
}

// Group is one asynq server: the mcpq queues it serves and how many of
// their jobs run at once.
type Group struct {
	Queues      []string
	Concurrency int
}

// Handler runs one delivery of a job; ctx carries, as its remote parent
// span, the trace context of the request that enqueued it. It returns nil
// when the job is done with (whatever became of the task) and an error to
// have the job delivered again (MaxRetry times, retryDelay apart).
type Handler func(ctx context.Context, j Job) error

// Servers are a worker's running asynq servers.
type Servers struct {
	srvs    []*asynq.Server
	waiters []*waiter
	// ahead holds the jobs done beside their outcome (done.go).
	ahead *doneAhead
	// served are the asynq queues served, by the mcpq queue they shard.
	served map[string]string
	// stopWakes ends the wake-up subscriptions.
	stopWakes context.CancelFunc
	// runners run the deliveries (runners.go).
	runners *runners
}

// Serve starts one asynq server per group, delivering each job to h, and
// subscribes to the wake channels of their queues (ctx bounds the wait for
// Redis to confirm them). It returns once every server takes jobs; Stop
// them.
func Serve(ctx context.Context, cfg ServeConfig, h Handler) (*Servers, error) {
	hold, interval := pollTiming(cfg.TaskCheckInterval)
	holding, woken := cfg.Holding, cfg.Woken
	if holding == nil {
		holding = func(float64) {}
	}
	if woken == nil {
		woken = func() {}
	}
	seen, err := cfg.Redis.SMembers(ctx, asynqQueuesKey).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: read the queues asynq has seen (%s): %w", asynqQueuesKey, err)
	}
	s := &Servers{served: map[string]string{}, ahead: &doneAhead{}}
	ahead := s.ahead
	if _, cluster := cfg.Redis.(*redis.ClusterClient); cluster {
		ahead = nil // the outcome and the job's done in different slots (done.go)
	}
	s.runners = newRunners(func(ctx context.Context, t *asynq.Task) error { return deliver(ctx, cfg, t, h, ahead) }, cfg.Logger)
	mux := asynq.NewServeMux()
	mux.HandleFunc(Type, s.runners.deliver)
	for _, g := range cfg.Groups {
		qs := make(map[string]int, len(g.Queues))
		var names []string
		var caps []int
		for _, q := range g.Queues {
			for _, aq := range servedShards(cfg, q, seen) {
				if _, dup := qs[aq]; dup {
					continue
				}
				qs[aq] = 1
				s.served[aq] = q
				names = append(names, aq)
				caps = append(caps, cfg.cap(q))
			}
		}
		wt := newWaiter(hold, names, caps, holding, woken)
		s.waiters = append(s.waiters, wt)
		s.srvs = append(s.srvs, asynq.NewServerFromRedisClient(&wakeClient{UniversalClient: cfg.Redis, w: wt, ahead: s.ahead}, asynq.Config{
			Concurrency:              g.Concurrency,
			DelayedTaskCheckInterval: cfg.DelayedCheck,
			Queues:                   qs,
			TaskCheckInterval:        interval,
			ShutdownTimeout:          cfg.ShutdownTimeout,
			RetryDelayFunc:           retryDelay,
			Logger:                   asynqLogger{cfg.Logger},
			LogLevel:                 asynq.WarnLevel,
		}))
	}
	// Wake-ups first: a Serve that fails (its context ended, say) then
	// fails before any server took a job.
	wctx, stop := context.WithCancel(context.Background())
	s.stopWakes = stop
	if err := s.listenWakes(ctx, wctx, cfg); err != nil {
		s.release()
		stop()
		s.runners.stop()
		return nil, fmt.Errorf("queue: subscribe to wake-ups: %w", err)
	}
	go s.watchShards(wctx, cfg)
	for i, srv := range s.srvs {
		if err := srv.Start(mux); err != nil {
			s.release()
			stop()
			for _, started := range s.srvs[:i] {
				started.Shutdown()
			}
			s.runners.stop()
			return nil, fmt.Errorf("queue: start asynq: %w", err)
		}
	}
	return s, nil
}

// servedShards are the asynq queues a server of mcpq queue q serves: its
// shards by cfg.Shards, then any other shard of it in seen (asynq:queues).
func servedShards(cfg ServeConfig, q string, seen []string) []string {
	out := ShardQueues(cfg.Keys.Queue(q), cfg.Shards.of(q))
	for _, aq := range seen {
		if name, ok := cfg.Keys.QueueName(aq); ok && name != q && unshard(name) == q && !slices.Contains(out, aq) {
			out = append(out, aq)
		}
	}
	return out
}

// watchShards logs an error, once each, for every shard of a served queue
// that Redis has seen a job on and these servers do not serve, every
// cfg.ShardCheck until done ends.
func (s *Servers) watchShards(done context.Context, cfg ServeConfig) {
	queues := map[string]bool{}
	for _, q := range s.served {
		queues[q] = true
	}
	told := map[string]bool{}
	t := time.NewTicker(cmp.Or(cfg.ShardCheck, 30*time.Second))
	defer t.Stop()
	for {
		select {
		case <-done.Done():
			return
		case <-t.C:
		}
		seen, err := cfg.Redis.SMembers(done, asynqQueuesKey).Result()
		if err != nil {
			continue // Redis away: the next tick looks again
		}
		for _, aq := range seen {
			name, ok := cfg.Keys.QueueName(aq)
			if _, served := s.served[aq]; !ok || served || told[aq] || !queues[unshard(name)] {
				continue
			}
			told[aq] = true
			cfg.Logger.Error("a shard of a served queue is not served: its jobs wait until this worker restarts; "+
				"give front ends and workers the same --queue-shards (docs/deploy.md, \"Queue shards\")",
				"queue", unshard(name), "shard", name)
		}
	}
}

// deliver decodes one delivery and hands it to h, with its done call
// (Job.Done) unless ahead is nil. A payload or job id no enqueue of this
// package makes is dropped (logged, not retried).
func deliver(ctx context.Context, cfg ServeConfig, t *asynq.Task, h Handler, ahead *doneAhead) error {
	m, err := decode(t.Payload())
	if err != nil {
		cfg.Logger.Error("undecodable job payload dropped", "err", err)
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	id, _ := asynq.GetTaskID(ctx)
	seq, ok := Seq(m.Ref, id)
	if !ok {
		cfg.Logger.Error("job id names no job of its task: dropped", "task", m.Ref.ID, "job", id)
		return fmt.Errorf("%w: job id %q", asynq.SkipRetry, id)
	}
	q, _ := asynq.GetQueueName(ctx)
	name, _ := cfg.Keys.QueueName(q)
	name = unshard(name) // a shard's job is its queue's
	if m.TP != "" {
		ctx = traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": m.TP})
	}
	j := Job{Ref: m.Ref, Tool: m.Tool, Seq: seq, Queue: name}
	if ahead == nil {
		return h(ctx, j)
	}
	done := newDoneCall(ahead, q, id)
	j.Done = done
	err = h(ctx, j)
	if err != nil {
		ahead.drop(done.key) // asynq retries or archives: it calls no done
	}
	return err
}

// Stop ends every hold at once (a held dequeue would hold up asynq's
// Stop), stops taking jobs, and gives running jobs ShutdownTimeout before
// asynq puts them back in their queue.
func (s *Servers) Stop() {
	s.release()
	if s.stopWakes != nil {
		s.stopWakes()
	}
	for _, srv := range s.srvs {
		srv.Stop()
	}
	for _, srv := range s.srvs {
		srv.Shutdown()
	}
	s.runners.stop()
}

// release ends every hold at once.
func (s *Servers) release() {
	for _, wt := range s.waiters {
		wt.release()
	}
}

// listenWakes subscribes to the wake channel of every queue the waiters
// serve (ctx bounds the wait for each confirmation) and passes each
// wake-up to its queue's waiter until done ends. A resubscription after a
// lost connection (events.Resync) wakes too: what was published meanwhile
// is gone.
func (s *Servers) listenWakes(ctx, done context.Context, cfg ServeConfig) error {
	for _, wt := range s.waiters {
		for q := range wt.index {
			name, _ := cfg.Keys.QueueName(q)
			sub, err := cfg.Hub.Subscribe(ctx, cfg.Keys.Wake(name))
			if err != nil {
				return err
			}
			go func() {
				defer sub.Close()
				for {
					select {
					case <-sub.C:
						wt.wake(q)
					case <-done.Done():
						return
					}
				}
			}()
		}
	}
	return nil
}

// asynqLogger adapts slog to asynq's logger.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) {
	msg := fmt.Sprint(args...)
	if strings.Contains(msg, errReleased.Error()) { // how a stopping worker ends a hold (dequeue.go)
		a.l.Debug(msg)
		return
	}
	a.l.Error(msg)
}
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }
