package taskstate

import "context"

// Progress sets the task's statusMessage for attempt.
func (s *Store) Progress(ctx context.Context, ref Ref, attempt int64, message string) error {
	return s.runCode(ctx, progressScript, ref, s.nowMs(), attempt, message, s.keys.Events(ref))
}
