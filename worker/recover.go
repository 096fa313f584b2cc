package worker

import (
	"context"
	"errors"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/internal/job"
)

// recoverStranded re-enqueues tasks whose job is gone: a front end that
// died between writing a record (or resuming it after input) and
// enqueueing its job, or a job asynq archived after its retries. Only tasks
// of entries this worker serves are touched; a task still queued is left
// alone. Several workers may run it at once: the job id makes a second
// enqueue a harmless conflict.
func (w *Worker) recoverStranded(ctx context.Context, client *asynq.Client, insp *asynq.Inspector) (int, error) {
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
		queue := w.store.Keys().Queue(e.queue)
		jobID := job.ID(st.Ref, st.Seq)
		info, err := insp.GetTaskInfo(queue, jobID)
		switch {
		case err == nil && info.State != asynq.TaskStateArchived:
			continue // queued, scheduled or retrying: it will run
		case err == nil:
			if err := insp.DeleteTask(queue, jobID); err != nil {
				return n, err
			}
		case !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound):
			return n, err
		}
		if err := w.enqueueJob(ctx, client, st.Ref, e.queue, st.Seq); err != nil {
			return n, err
		}
		w.log.Warn("re-enqueued a stranded task", "task", st.Ref.ID, "job", jobID, "tool", st.Tool)
		n++
	}
	return n, nil
}
