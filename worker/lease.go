package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// workerID names one worker process for its lease, the tasks it claims
// and their timelines: its Config.Name (host and pid by default) and a
// random part, so a restarted worker that keeps its --worker-name is still
// a new one, and its predecessor's tasks are taken over when that one's
// lease runs out.
func workerID(name string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return name + ":" + hex.EncodeToString(b[:])
}

// lease renews the worker's lease every HeartbeatInterval until ctx ends,
// then drops it (taskstate/catalog/leases.go): the takeover scan keeps every task of
// a worker whose lease is live, so a task heartbeat lost to a Redis outage
// does not cost the task's work. When a renewal goes through after a
// failed one (Redis is back), every running delivery heartbeats at once.
func (w *Worker) lease(ctx context.Context) {
	t := time.NewTicker(w.cfg.HeartbeatInterval)
	defer t.Stop()
	failing := false
	for {
		err := w.store.Catalog().Lease(ctx, w.store.Worker())
		switch {
		case err != nil && ctx.Err() == nil:
			if !failing {
				w.log.Warn("worker lease not renewed", "err", err)
			}
			failing = true
		case err == nil && failing:
			failing = false
			w.log.Info("worker lease renewed again: heartbeating every running task")
			w.checkAll()
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			if err := w.store.Catalog().Unlease(dctx, w.store.Worker()); err != nil {
				w.log.Warn("worker lease not dropped: it ages out", "err", err)
			}
			return
		case <-t.C:
		}
	}
}

// checkAll heartbeats every running delivery at once.
func (w *Worker) checkAll() {
	w.jobsMu.Lock()
	defer w.jobsMu.Unlock()
	for _, byAttempt := range w.jobs {
		for _, check := range byAttempt {
			check()
		}
	}
}

// runningHere lists the attempts of the task that run in this worker.
func (w *Worker) runningHere(id string) []int64 {
	w.jobsMu.Lock()
	defer w.jobsMu.Unlock()
	var out []int64
	for a := range w.jobs[id] {
		out = append(out, a)
	}
	return out
}
