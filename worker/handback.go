package worker

import (
	"context"
	"errors"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// A worker that receives a job for a tool it does not serve hands the job
// back, so that a worker that serves the tool runs it (docs/tools.md,
// "Workers with different tools on one queue"). The job names its tool,
// so this costs the served path nothing. As a job over its principal's
// share does (later), the job goes back to the queue to be delivered after
// BusyDelay, under a new job number and unclaimed: nothing a client sees
// changes. It goes to the queue the tool's catalog entry names, which is
// its own but for a tool that moved queues. The delay keeps a job no
// worker at hand serves from going round at full speed, and the catalog
// decides when to stop: once no live worker serves the tool (its serving
// entry outlived its last worker's heartbeat by ServedIntervals), the task
// ends failed, as a new call of the tool is refused.

// handBack gives j back, or ends its task when no live worker serves its
// tool. It returns an error only when the job should be delivered again
// (Redis unreachable).
func (w *Worker) handBack(ctx context.Context, j queue.Job) error {
	def, err := w.store.Catalog().Entry(ctx, j.Tool)
	if err != nil {
		return err
	}
	var unserved *proto.Error
	if def == nil || !def.Served(w.store.Now()) {
		unserved = proto.NewError(proto.CodeInvalidParams, "Unknown tool: %s (no live worker serves it)", j.Tool)
	}
	next, err := w.store.HandBack(ctx, j.Ref, j.Seq, unserved)
	switch {
	case err == nil && next == 0:
		w.metrics.handBacks.WithLabelValues(handBackFailed).Inc()
		w.series.Ended(j.Tool, string(proto.StatusFailed), 0)
		w.log.Warn("task failed: no live worker serves its tool", "task", j.Ref.ID, "tool", j.Tool)
		w.deleteArguments(ctx, j.Ref.ID, "")
		return nil
	case err == nil:
	case taskstate.NotOwned(err), errors.Is(err, taskstate.ErrCancelled), errors.Is(err, taskstate.ErrIllegal):
		w.log.Debug("job for a tool not served here is a no-op", "task", j.Ref.ID, "tool", j.Tool, "reason", err)
		if errors.Is(err, taskstate.ErrCancelled) {
			w.deleteArguments(ctx, j.Ref.ID, "") // cancelled before it ran
		}
		return nil
	default:
		return err
	}
	back := queue.Job{Ref: j.Ref, Tool: j.Tool, Seq: next, Queue: j.Queue}
	if def.Queue != "" {
		back.Queue = def.Queue
	}
	if err := w.enq.EnqueueIn(ctx, back, w.cfg.BusyDelay); err != nil {
		// The task waits as "working" with no job: a worker that serves
		// its tool finds it stranded (RecoverAfter) and enqueues job next.
		w.log.Warn("job for a tool not served here not handed back: stranded-task recovery will", "task", j.Ref.ID,
			"tool", j.Tool, "job", queue.ID(back.Ref, back.Seq), "err", err)
		return nil
	}
	w.metrics.handBacks.WithLabelValues(handBackRequeued).Inc()
	w.log.Debug("job for a tool not served here handed back", "task", j.Ref.ID, "tool", j.Tool, "queue", back.Queue)
	return nil
}
