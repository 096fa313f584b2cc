package taskstate

import (
	"context"
	"time"
)

// SetTTL changes a live task's ttlMs (counted from createdAt, so ttl must
// reach past now; ErrIllegal otherwise). attempt fences a worker's write;
// 0 means the caller is not a worker.
func (s *Store) SetTTL(ctx context.Context, ref Ref, attempt int64, ttl time.Duration) error {
	a := ""
	if attempt > 0 {
		a = formatInt(attempt)
	}
	return s.runKeys(ctx, ttlScript, []string{s.keys.Task(ref), s.keys.Deadlines(ref.Owner)},
		s.nowMs(), a, ttl.Milliseconds(), s.grace.Milliseconds(), ref.ID)
}
