package worker

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/job"
)

// The asynq servers a worker runs: their queues, their Redis clients
// (wake.go) and their logger.

// startServers starts the asynq servers: one per queue of Config.Queues,
// or one for all the queues named (the default), each with the waiter of
// its wake-ups (wake.go).
func (w *Worker) startServers(mux *asynq.ServeMux, named map[string]int) ([]*asynq.Server, []*waiter, error) {
	hold, interval := pollTiming(w.cfg.TaskCheckInterval)
	var waiters []*waiter
	server := func(concurrency int, queues ...string) *asynq.Server {
		qs := make(map[string]int, len(queues))
		names := make([]string, 0, len(queues))
		for _, q := range queues {
			qs[w.store.Keys().Queue(q)] = 1
			names = append(names, w.store.Keys().Queue(q))
		}
		wt := newWaiter(hold, names, w.metrics.holding.Add, w.metrics.woken.Inc)
		waiters = append(waiters, wt)
		var delayedCheck time.Duration // asynq's default, 5s
		if len(w.cfg.MaxRunningPerPrincipal) > 0 {
			delayedCheck = w.cfg.BusyDelay // jobs over a share come back after BusyDelay, not up to 5s later
		}
		return asynq.NewServerFromRedisClient(&wakeClient{UniversalClient: w.cfg.Redis, w: wt}, asynq.Config{
			Concurrency:              concurrency,
			DelayedTaskCheckInterval: delayedCheck,
			Queues:                   qs,
			TaskCheckInterval:        interval,
			ShutdownTimeout:          w.cfg.ShutdownTimeout,
			RetryDelayFunc:           job.RetryDelay,
			Logger:                   asynqLogger{w.log},
			LogLevel:                 asynq.WarnLevel,
		})
	}
	var srvs []*asynq.Server
	if len(w.cfg.Queues) == 0 {
		queues := make([]string, 0, len(named))
		for q := range named {
			queues = append(queues, q)
		}
		srvs = append(srvs, server(w.cfg.Concurrency, queues...))
	} else {
		for q, n := range w.cfg.Queues {
			srvs = append(srvs, server(n, q))
		}
	}
	for i, srv := range srvs {
		if err := srv.Start(mux); err != nil {
			w.release(waiters)
			for _, started := range srvs[:i] {
				started.Shutdown()
			}
			return nil, nil, fmt.Errorf("worker: start asynq: %w", err)
		}
	}
	return srvs, waiters, nil
}

// asynqLogger adapts slog to asynq's logger.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) {
	msg := fmt.Sprint(args...)
	if strings.Contains(msg, errReleased.Error()) { // how a stopping worker ends a hold (wake.go)
		a.l.Debug(msg)
		return
	}
	a.l.Error(msg)
}
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }
