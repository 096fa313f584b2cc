package taskstate

import (
	"context"
	"errors"

	"github.com/mcpq/mcpq/proto"
)

// RequestCancel asks for the task to stop (tasks/cancel). It returns nil when
// the request was accepted or the task already ended (cancel is idempotent),
// and ErrNotFound for a missing or expired task. A task no worker holds
// (queued, parked for input, or resumed and not yet picked up) ends
// cancelled at once; the worker of a running one ends it cancelled when
// the signal reaches it, and the takeover scan does if it has not within
// Options.CancelGrace. Once acknowledged, a cancel is kept: the task ends
// "cancelled" whatever its handler returns.
func (s *Store) RequestCancel(ctx context.Context, ref Ref) error {
	if !ValidID(ref.ID) {
		return ErrNotFound
	}
	err := s.runKeysWaited(ctx, cancelScript, s.liveKeys(ref), s.nowMs(), s.keys.Events(ref), ref.ID, s.keys.Stops(),
		s.cancelGrace.Milliseconds())
	switch {
	case errors.Is(err, ErrExpired):
		return ErrNotFound
	case errors.Is(err, ErrCancelled): // ended here: no worker held it
		s.series.Ended("", string(proto.StatusCancelled), 0)
		return nil
	case errors.Is(err, ErrTerminal):
		return nil
	}
	return err
}
