package worker

import (
	"context"

	"github.com/mcpq/mcpq/internal/queue"
)

// recoverStranded re-enqueues tasks whose job is gone: a front end that
// died between writing a record (or resuming it after input) and
// enqueueing its job, or a job asynq archived after its retries. Only tasks
// of entries this worker serves are touched; a task still queued is left
// alone. Several workers may run it at once: the job id makes a second
// enqueue a harmless conflict.
func (w *Worker) recoverStranded(ctx context.Context) (int, error) {
	stranded, err := w.store.StrandedTasks(ctx, w.cfg.RecoverAfter)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, st := range stranded {
		e := w.entry(st.Tool)
		if e == nil {
			continue
		}
		j := queue.Job{Ref: st.Ref, Tool: st.Tool, Seq: st.Seq, Queue: e.queue}
		revived, err := w.enq.Revive(ctx, j) // a job queued, scheduled or retrying is left: it will run
		if err != nil {
			return n, err
		}
		if revived {
			w.log.Warn("re-enqueued a stranded task", "task", st.Ref.ID, "job", queue.ID(j.Ref, j.Seq), "tool", st.Tool)
			n++
		}
	}
	return n, nil
}
