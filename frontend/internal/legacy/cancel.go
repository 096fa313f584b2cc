package legacy

import (
	"context"
	"errors"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// cancelWait bounds how long a 2025-11-25 tasks/cancel waits for the task
// it cancelled to end (at most the sync wait limit). A worker ends a
// cancelled task when the stop signal reaches it, and the takeover scan
// ends it after taskstate.Options.CancelGrace when its worker is gone; a
// task still not ended after this is answered as it is ("Cancelling").
const cancelWait = 10 * time.Second

// cancelTask serves 2025-11-25 tasks/cancel: that revision has the
// receiver move the task to cancelled before it answers, so the answer is
// the task once it ended (cancelled), whether no worker held it (the
// cancel script ends it at once) or its worker ended it on the signal;
// -32602 for a task that already ended.
func (c *Call) cancelTask(ctx context.Context, id string) (any, error) {
	tasks := c.era.tasks
	ref, err := c.taskRef(id)
	if err != nil {
		return nil, err
	}
	rec, err := tasks.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	if rec.Status.Terminal() {
		return nil, proto.NewError(proto.CodeInvalidParams, "Cannot cancel task: already in terminal status %s", rec.Status)
	}
	// Subscribed before the cancel, so the task's end is not missed.
	sub, err := c.era.cfg.Hub.Subscribe(ctx, tasks.Keys().Events(ref))
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	if rec, err = c.cancelled(ctx, ref, sub.C, min(cancelWait, c.era.cfg.SyncWaitLimit)); err != nil {
		return nil, err
	}
	return &TaskResult{Meta: c.era.cfg.ResultMeta, Task: TaskOf(rec.Task())}, nil
}

// cancelled requests the cancel of ref and waits (up to wait) on its
// events (ch) until the task ended, asking again should it park for
// input meanwhile (a parked task is cancelled at once). It returns the
// record as it is then.
func (c *Call) cancelled(ctx context.Context, ref taskstate.Ref, ch <-chan string,
	wait time.Duration) (*taskstate.Record, error) {
	tasks := c.era.tasks
	timer := time.NewTimer(wait)
	defer timer.Stop()
	ask := true
	for {
		if ask {
			if err := tasks.RequestCancel(ctx, ref); err != nil && !errors.Is(err, taskstate.ErrTerminal) {
				return nil, err
			}
		}
		rec, err := tasks.Get(ctx, ref)
		if err != nil || rec.Status.Terminal() {
			return rec, err
		}
		ask = rec.Status == proto.StatusInputRequired
		// Until the next change of the task (or the wait's end).
		for changed := false; !changed; {
			select {
			case <-ch:
				changed = true
			case <-timer.C:
				return tasks.Get(ctx, ref)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
}
