package worker

import (
	"context"
	"errors"
	"time"
)

// outlastWait bounds the pause between two tries of a write while the task
// store is unreachable.
const outlastWait = 2 * time.Second

// outlast runs one of the call's idempotent writes (progress, heartbeat,
// checkpoint) and, while the task store does not answer, tries it again
// (after 100 ms, doubling up to outlastWait) until it goes through, is
// refused (the task is cancelled or no longer this attempt's), or ctx ends.
// So a Redis pause or restart holds a run up for as long as it lasts,
// instead of ending it with a retry that throws its work since the last
// checkpoint away (issue 25, item 1; docs/reliability.md, "Worker leases").
// Meter is not retried: a write that timed out may still be executed by a
// Redis that was only frozen, and usage must not count twice.
func (c *Call) outlast(ctx context.Context, write func(context.Context) error) error {
	wait := 100 * time.Millisecond
	for {
		err := c.stateErr(write(ctx))
		var transient *transientError
		if !errors.As(err, &transient) {
			return err
		}
		if Sleep(ctx, wait) != nil {
			return c.stateErr(ctx.Err())
		}
		wait = min(2*wait, outlastWait)
	}
}
