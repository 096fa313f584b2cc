package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mcpq/mcpq/taskstate"
)

// deadlineCheck bounds one reap at a run's deadline.
const deadlineCheck = 2 * time.Second

// atDeadline ends the run at the task's deadline rather than at the next
// reap pass: the task is reaped then (ended "expired", its reservation
// settled with what was metered so far; a held call and listeners hear of
// it at once) and the run is stopped (stop with errStop: the handler's
// context ends, a command tool's process group is signalled). A TTL
// extended meanwhile (Call.ExtendTTL) moves the timer to the new deadline.
// It returns the func that disarms it.
func (w *Worker) atDeadline(ref taskstate.Ref, deadline time.Time, stop context.CancelCauseFunc) (disarm func()) {
	if deadline.IsZero() {
		return func() {}
	}
	var mu sync.Mutex
	done := false
	var t *time.Timer
	fire := func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadlineCheck)
		defer cancel()
		err := w.store.ReapOne(ctx, ref)
		switch {
		case err == nil, errors.Is(err, taskstate.ErrNotFound):
			w.metrics.expired.Inc()
			w.series.Expired(1)
			stop(errStop)
			return
		case errors.Is(err, taskstate.ErrIllegal): // extended: look again at the new deadline
			rec, gerr := w.store.Get(ctx, ref)
			switch {
			case gerr != nil || rec.Deadline().IsZero():
				return
			case rec.Deadline().After(deadline):
				deadline = rec.Deadline()
			default: // the store's clock is behind this one's
				deadline = time.Now().Add(w.cfg.HeartbeatInterval)
			}
		default: // Redis unreachable: the reap pass ends it later
			w.log.Warn("task not reaped at its deadline: the reaper will", "task", ref.ID, "err", err)
			deadline = time.Now().Add(w.cfg.HeartbeatInterval)
		}
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Reset(time.Until(deadline))
		}
	}
	mu.Lock()
	t = time.AfterFunc(time.Until(deadline), fire)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		done = true
		t.Stop()
	}
}
