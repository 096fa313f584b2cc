package taskstate

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/proto"
)

// Stranded is a task that waits for a job no worker holds: working, not
// held by any delivery, for longer than a queue hop should take. Usually
// its job is just queued behind others; when the front end died between
// writing the record and enqueueing, there is no job at all.
type Stranded struct {
	// Ref names the task and Tool is its catalog key.
	Ref  Ref
	Tool string
	// Seq is its current job's sequence number (the job it has, or should have).
	Seq int64
	// Deadline is when the task expires (zero: never).
	Deadline time.Time
}

// StrandedTasks lists live tasks that are working, held by no delivery and
// last changed more than olderThan ago.
func (s *Store) StrandedTasks(ctx context.Context, olderThan time.Duration) ([]Stranded, error) {
	// It pages through every owner's live tasks created before the cutoff
	// (held ones included, which can be many for long-running tools),
	// reading each page's records in one pipeline.
	now := s.now()
	cutoff := now.Add(-olderThan)
	var out []Stranded
	iter := s.rdb.SScan(ctx, s.keys.owners(), 0, "", 100).Iterator()
	for iter.Next(ctx) {
		owner := iter.Val()
		for offset := int64(0); ; offset += reapBatch {
			ids, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.keys.live(owner), Start: "-inf",
				Stop: strconv.FormatInt(cutoff.UnixMilli(), 10), ByScore: true, Offset: offset, Count: reapBatch}).Result()
			if err != nil {
				return nil, err
			}
			if len(ids) == 0 {
				break
			}
			pipe := s.rdb.Pipeline()
			recs := make([]*redis.MapStringStringCmd, len(ids))
			for i, id := range ids {
				recs[i] = pipe.HGetAll(ctx, s.keys.Task(Ref{Owner: owner, ID: id}))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return nil, err
			}
			for i, id := range ids {
				r, ok := decodeRecord(Ref{Owner: owner, ID: id}, recs[i].Val())
				if !ok || r.Expired(now) || r.Status != proto.StatusWorking || r.Running != 0 || r.LastUpdatedAt.After(cutoff) {
					continue
				}
				out = append(out, Stranded{Ref: r.Ref, Tool: r.Tool, Seq: r.Resumes, Deadline: r.Deadline()})
			}
			if len(ids) < reapBatch {
				break
			}
		}
	}
	return out, iter.Err()
}
