package taskstate

import "context"

// Heartbeat records that attempt still runs the task and says whether it
// may go on: nil to continue, ErrCancelled when a cancel was requested, and
// ErrStale, ErrTerminal, ErrExpired or ErrNotFound when the work must stop.
func (s *Store) Heartbeat(ctx context.Context, ref Ref, attempt int64) error {
	return s.runCode(ctx, heartbeatScript, ref, s.nowMs(), attempt, s.lost.Milliseconds(), ref.ID)
}
