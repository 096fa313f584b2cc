package taskstate

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// TakenBack is a task the takeover scan took back from a lost delivery.
type TakenBack struct {
	// Ref names the task and Tool is its catalog key.
	Ref  Ref
	Tool string
	// Seq is the number of the job to enqueue now.
	Seq int64
	// Lost counts the task's lost deliveries so far, this one included.
	Lost int64
	// Heartbeat is the lost delivery's last sign of life.
	Heartbeat time.Time
}

// TakeoverStats counts what one takeover scan did besides TakenBack.
type TakeoverStats struct {
	// Cancelled counts overdue cancels the scan ended "cancelled".
	Cancelled int
	// Failed counts tasks ended "failed" after more than maxLost lost deliveries.
	Failed int
}

// TakeOver walks every owner's held index for tasks that are due: a
// delivery silent for LostAfter, or a cancel its worker has not ended
// within CancelGrace. Overdue cancels end "cancelled". When takeLost is
// true, each lost delivery is taken back (its attempt fenced off, a new job
// number issued, which the caller enqueues), or the task ends "failed"
// once it has lost more than maxLost deliveries. Callers pass takeLost =
// false while they cannot tell a lost worker from their own outage.
// Several scans may run at once: each change happens once.
func (s *Store) TakeOver(ctx context.Context, maxLost int, takeLost bool) ([]TakenBack, TakeoverStats, error) {
	now := s.now()
	nowMs := now.UnixMilli()
	lost := "0"
	if takeLost {
		lost = "1"
	}
	var out []TakenBack
	var stats TakeoverStats
	iter := s.rdb.SScan(ctx, s.keys.owners(), 0, "", 100).Iterator()
	for iter.Next(ctx) {
		owner := iter.Val()
		held := s.keys.held(owner)
		// Entries not due yet are re-indexed later, done ones removed; one
		// left due (takeLost false) is skipped by the offset.
		for offset := int64(0); ; {
			ids, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: held, Start: "-inf", Stop: nowMs,
				ByScore: true, Offset: offset, Count: reapBatch}).Result()
			if err != nil {
				return out, stats, err
			}
			for _, id := range ids {
				ref := Ref{Owner: owner, ID: id}
				res, err := takeoverScript.Run(ctx, s.rdb, s.liveKeys(ref), nowMs, s.lost.Milliseconds(),
					s.cancelGrace.Milliseconds(), maxLost, s.keys.Events(ref), id, s.keys.Stops(), lost).Slice()
				if err != nil {
					return out, stats, err
				}
				code, _ := res[0].(int64)
				switch code {
				case codeOK:
					if len(res) < 5 {
						return out, stats, fmt.Errorf("taskstate: takeover returned %d values", len(res))
					}
					tb := TakenBack{Ref: ref}
					tb.Seq, _ = res[1].(int64)
					tb.Lost, _ = res[2].(int64)
					beat, _ := res[3].(int64)
					tb.Heartbeat = time.UnixMilli(beat)
					tb.Tool, _ = res[4].(string)
					out = append(out, tb)
				case codeCancelled:
					stats.Cancelled++
					s.settledAt(res, 1)
				case codeLimit:
					stats.Failed++
					s.settledAt(res, 3)
				case codeIllegal:
					if !takeLost {
						offset++ // may still be due: not ours to take now
					}
				}
			}
			if len(ids) < reapBatch {
				break
			}
		}
	}
	return out, stats, iter.Err()
}
