package taskstate

import (
	"context"
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
	// It pages through every owner's live index (held tasks included,
	// which can be many for long-running tools), reading each page's
	// records in one pipeline.
	now := s.now()
	cutoff := now.Add(-olderThan)
	var out []Stranded
	iter := s.rdb.SScan(ctx, s.keys.owners(), 0, "", 100).Iterator()
	for iter.Next(ctx) {
		owner := iter.Val()
		// HSCAN answers field and value in turn (NOVALUES needs Redis 7.4).
		live := s.rdb.HScan(ctx, s.keys.Live(owner), 0, "", reapBatch).Iterator()
		var ids []string
		page := func() error {
			if len(ids) == 0 {
				return nil
			}
			pipe := s.rdb.Pipeline()
			recs := make([]*redis.MapStringStringCmd, len(ids))
			for i, id := range ids {
				recs[i] = pipe.HGetAll(ctx, s.keys.Task(Ref{Owner: owner, ID: id}))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
			for i, id := range ids {
				r, ok := decodeRecord(Ref{Owner: owner, ID: id}, recs[i].Val())
				if !ok || r.Expired(now) || r.Status != proto.StatusWorking || r.Running != 0 || r.LastUpdatedAt.After(cutoff) {
					continue
				}
				out = append(out, Stranded{Ref: r.Ref, Tool: r.Tool, Seq: r.Resumes, Deadline: r.Deadline()})
			}
			ids = ids[:0]
			return nil
		}
		for field := true; live.Next(ctx); field = !field {
			if id := live.Val(); field && id != liveTotal {
				ids = append(ids, id)
			}
			if len(ids) == reapBatch {
				if err := page(); err != nil {
					return nil, err
				}
			}
		}
		if err := live.Err(); err != nil {
			return nil, err
		}
		if err := page(); err != nil {
			return nil, err
		}
	}
	return out, iter.Err()
}

// liveTotal is the live index's field of the argument bytes' sum (Keys.Live).
const liveTotal = "total"
