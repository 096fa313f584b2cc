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
// once it has lost more than maxLost deliveries. A delivery is lost only
// when its worker's lease (catalog.Catalog.Lease) is LostAfter old too: a live worker
// keeps its tasks whatever their heartbeats say. Callers pass takeLost =
// false while they cannot tell a lost worker from their own outage (after
// one, every lease is old until live workers renew theirs).
// Several scans may run at once: each change happens once.
func (s *Store) TakeOver(ctx context.Context, maxLost int, takeLost bool) ([]TakenBack, TakeoverStats, error) {
	sc := &takeoverScan{s: s, nowMs: s.now().UnixMilli(), maxLost: maxLost, lost: "0"}
	if takeLost {
		sc.lost = "1"
	}
	iter := s.rdb.SScan(ctx, s.keys.owners(), 0, "", 100).Iterator()
	for iter.Next(ctx) {
		owner := iter.Val()
		held := s.keys.held(owner)
		// Entries not due yet are re-indexed later, done ones removed; one
		// left due (takeLost false) is skipped by the offset.
		for offset := int64(0); ; {
			ids, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: held, Start: "-inf", Stop: sc.nowMs,
				ByScore: true, Offset: offset, Count: reapBatch}).Result()
			if err != nil {
				return sc.out, sc.stats, err
			}
			for _, id := range ids {
				left, err := sc.one(ctx, Ref{Owner: owner, ID: id})
				if err != nil {
					return sc.out, sc.stats, err
				}
				if left {
					offset++ // may still be due: not ours to take now
				}
			}
			if len(ids) < reapBatch {
				break
			}
		}
	}
	return sc.out, sc.stats, iter.Err()
}

// takeoverScan is one TakeOver's state: what it did, and the workers'
// leases, read once when the first due task names a worker.
type takeoverScan struct {
	s       *Store
	nowMs   int64
	maxLost int
	lost    string
	leases  map[string]int64
	out     []TakenBack
	stats   TakeoverStats
}

// one looks at one due task. left reports a task left due in the index.
func (sc *takeoverScan) one(ctx context.Context, ref Ref) (left bool, err error) {
	s := sc.s
	worker, lease := "", int64(0)
	for range 2 { // a second run when the task names a worker: with its lease
		res, err := s.run(ctx, takeoverScript, s.liveKeys(ref), sc.nowMs, s.lost.Milliseconds(),
			s.cancelGrace.Milliseconds(), sc.maxLost, s.keys.Events(ref), ref.ID, s.keys.Stops(), sc.lost,
			worker, lease).Slice()
		if err != nil {
			return false, err
		}
		code, _ := res[0].(int64)
		switch code {
		case codeHeld:
			if len(res) < 2 {
				return false, fmt.Errorf("taskstate: takeover returned %d values", len(res))
			}
			worker, _ = res[1].(string)
			if sc.leases == nil {
				if sc.leases, err = s.catalog.Leases(ctx); err != nil {
					return false, err
				}
			}
			lease = sc.leases[worker]
			continue
		case codeOK:
			if len(res) < 5 {
				return false, fmt.Errorf("taskstate: takeover returned %d values", len(res))
			}
			tb := TakenBack{Ref: ref}
			tb.Seq, _ = res[1].(int64)
			tb.Lost, _ = res[2].(int64)
			beat, _ := res[3].(int64)
			tb.Heartbeat = time.UnixMilli(beat)
			tb.Tool, _ = res[4].(string)
			sc.out = append(sc.out, tb)
		case codeCancelled:
			sc.stats.Cancelled++
			s.settledAt(res, 1)
		case codeLimit:
			sc.stats.Failed++
			s.settledAt(res, 3)
		case codeIllegal:
			return sc.lost != "1", nil
		}
		return false, nil
	}
	return true, nil // its worker changed between the runs: the next scan looks again
}
