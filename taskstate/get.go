package taskstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/proto"
)

// Get reads a task record. A missing record, a malformed id and a record
// whose TTL has passed all answer ErrNotFound.
func (s *Store) Get(ctx context.Context, ref Ref) (*Record, error) {
	if !ValidID(ref.ID) {
		return nil, ErrNotFound
	}
	f, err := s.readRecord(ctx, ref)
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
		r.StatusMessage = fmt.Sprintf("No word from its worker since %s", formatTime(r.Heartbeat))
	}
	return r, nil
}

// readRecord is the record's hash with its companion's fields merged in
// (Keys.TaskExtra: an ended task keeps its long values there); empty when
// the task is gone. A live task, the one clients poll again and again, is
// one HGETALL, as before there was a companion; only an ended task whose
// record says it has one ('x') costs a second round trip, GET, and is read
// once or twice at its end. A companion missing after an 'x' was reaped
// between the two reads: the task is gone.
func (s *Store) readRecord(ctx context.Context, ref Ref) (map[string]string, error) {
	f, err := s.rdb.HGetAll(ctx, s.keys.Task(ref)).Result()
	if err != nil || f["x"] == "" {
		return f, err
	}
	extra, err := s.rdb.Get(ctx, s.keys.TaskExtra(ref)).Result()
	if errors.Is(err, redis.Nil) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return f, mergeExtra(f, extra)
}
