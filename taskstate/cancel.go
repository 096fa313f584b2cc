package taskstate

import (
	"context"
	"errors"
)

// RequestCancel asks for the task to stop (tasks/cancel). It returns nil when
// the request was accepted or the task already ended (cancel is idempotent),
// and ErrNotFound for a missing or expired task. A task no worker holds
// (queued, parked for input, or resumed and not yet picked up) ends
// cancelled at once; a running one stops at its next step.
func (s *Store) RequestCancel(ctx context.Context, ref Ref) error {
	if !ValidID(ref.ID) {
		return ErrNotFound
	}
	err := s.runKeysWaited(ctx, cancelScript, s.liveKeys(ref), s.nowMs(), s.keys.Events(ref), ref.ID, s.keys.Stops())
	switch {
	case errors.Is(err, ErrExpired):
		return ErrNotFound
	case errors.Is(err, ErrCancelled), errors.Is(err, ErrTerminal):
		return nil
	}
	return err
}
