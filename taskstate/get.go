package taskstate

import (
	"context"
	"fmt"

	"github.com/mcpq/mcpq/proto"
)

// Get reads a task record. A missing record, a malformed id and a record
// whose TTL has passed all answer ErrNotFound.
func (s *Store) Get(ctx context.Context, ref Ref) (*Record, error) {
	if !ValidID(ref.ID) {
		return nil, ErrNotFound
	}
	f, err := s.rdb.HGetAll(ctx, s.keys.Task(ref)).Result()
	if err != nil {
		return nil, err
	}
	now := s.now()
	r, ok := decodeRecord(ref, f)
	if !ok || r.Expired(now) {
		return nil, ErrNotFound
	}
	if r.Status == proto.StatusWorking && r.Running > 0 && !r.Heartbeat.IsZero() && now.Sub(r.Heartbeat) > s.lost {
		// Said before the takeover scan acts on it, or when no worker runs the scan.
		r.StatusMessage = fmt.Sprintf("No word from its worker since %s", FormatTime(r.Heartbeat))
	}
	return r, nil
}
