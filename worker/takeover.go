package worker

import (
	"context"
	"time"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/series"
)

// takeover runs the takeover scan every TakeoverInterval until ctx ends: a
// delivery whose heartbeat is LostAfter old is taken back and its task's
// next job enqueued at once, without waiting for asynq's lease recovery
// (60 s and more); an acknowledged cancel its worker did not end within
// the store's cancel grace ends "cancelled"; a task that lost more than
// MaxLostDeliveries deliveries ends "failed". Lost deliveries are taken
// back only once this worker has reached Redis without a failure for
// LostAfter: after an outage every heartbeat is old, and live workers need
// a heartbeat interval to show they are alive.
func (w *Worker) takeover(ctx context.Context) {
	tick := time.NewTicker(w.cfg.TakeoverInterval)
	defer tick.Stop()
	var healthySince time.Time // zero: the last scan failed
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		if healthySince.IsZero() {
			healthySince = now
		}
		taken, stats, err := w.store.TakeOver(ctx, w.cfg.MaxLostDeliveries, now.Sub(healthySince) >= w.cfg.LostAfter)
		if err == nil {
			err = w.rerun(ctx, taken)
		}
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("takeover scan", "err", err)
			}
			healthySince = time.Time{}
		}
		w.metrics.takeovers.WithLabelValues(takeoverCancelled).Add(float64(stats.Cancelled))
		w.metrics.takeovers.WithLabelValues(takeoverFailed).Add(float64(stats.Failed))
		w.noteTakeoverEnds(stats.Cancelled, stats.Failed)
		if stats.Cancelled > 0 || stats.Failed > 0 {
			w.log.Info("takeover scan ended tasks", "cancelled", stats.Cancelled, "failedAfterLostDeliveries", stats.Failed)
		}
	}
}

// rerun enqueues the next job of each task taken back, at the front of
// its queue. A job not enqueued
// (Redis gone again) is found later by the stranded-task recovery, which
// enqueues the same job id.
func (w *Worker) rerun(ctx context.Context, taken []taskstate.TakenBack) error {
	var queues map[string]string // tool key → queue, from the catalog, read once if needed
	for _, tb := range taken {
		q := ""
		if e := w.entry(tb.Tool); e != nil {
			q = e.queue
		} else {
			if queues == nil {
				defs, err := w.store.Catalog().Entries(ctx)
				if err != nil {
					return err
				}
				queues = map[string]string{}
				for _, d := range defs {
					queues[d.Key()] = d.Queue
				}
			}
			q = queues[tb.Tool]
		}
		if q == "" {
			q = DefaultQueue
		}
		// At the front of its queue: the task ran before, and should not
		// wait behind the whole backlog a second time.
		if err := w.enq.EnqueueFront(ctx, queue.Job{Ref: tb.Ref, Tool: tb.Tool, Seq: tb.Seq, Queue: q}); err != nil {
			return err
		}
		w.metrics.takeovers.WithLabelValues(takeoverRerun).Inc()
		w.series.Takeovers(series.TakeoverRerun, 1)
		w.log.Warn("took a task back from a lost worker", "task", tb.Ref.ID, "tool", tb.Tool,
			"lastHeartbeat", tb.Heartbeat, "lostDeliveries", tb.Lost, "job", queue.ID(tb.Ref, tb.Seq))
	}
	return nil
}

// noteTakeoverEnds counts the tasks a takeover scan ended in the series:
// as takeover actions and as ends (the scan's stats name no tool).
func (w *Worker) noteTakeoverEnds(cancelled, failed int) {
	w.series.Takeovers(series.TakeoverCancelled, cancelled)
	w.series.Takeovers(series.TakeoverFailed, failed)
	for range cancelled {
		w.series.Ended("", string(proto.StatusCancelled), 0)
	}
	for range failed {
		w.series.Ended("", string(proto.StatusFailed), 0)
	}
}
