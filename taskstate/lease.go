package taskstate

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// leaseKeep is how long a lease stays in Keys.workers after its worker's
// last renewal before Lease prunes it: long past any lost-after.
const leaseKeep = time.Hour

// workers holds the liveness of every worker of the deployment: member
// the worker's id (Options.Worker), score the unix ms of its last lease
// renewal (Lease). A claimed task names its worker in the record's
// 'worker' field, and the takeover scan takes a task back only once that
// worker's lease is lost-after old (takeover.lua). One key for the whole
// deployment (it is read apart from the task scripts, so on a cluster it
// may live in any slot). Type: sorted set.
func (k Keys) leases() string { return k.Prefix + "leases" }

// Worker returns the id this store claims tasks under (Options.Worker).
func (s *Store) Worker() string { return s.worker }

// Lease renews the lease of this store's worker (Options.Worker): the
// worker is alive now. A renewal never moves the lease back (a write
// delayed by an outage carries an older time), and leases of workers gone
// for an hour are dropped on the way.
func (s *Store) Lease(ctx context.Context) error {
	if s.worker == "" {
		return nil
	}
	now := s.now()
	pipe := s.rdb.Pipeline()
	pipe.ZAddGT(ctx, s.keys.leases(), redis.Z{Score: float64(now.UnixMilli()), Member: s.worker})
	pipe.ZRemRangeByScore(ctx, s.keys.leases(), "-inf", "("+strconv.FormatInt(now.Add(-leaseKeep).UnixMilli(), 10))
	_, err := pipe.Exec(ctx)
	return err
}

// Unlease drops the lease of this store's worker: it stopped, and the
// tasks it still names are anyone's to take back at once.
func (s *Store) Unlease(ctx context.Context) error {
	if s.worker == "" {
		return nil
	}
	return s.rdb.ZRem(ctx, s.keys.leases(), s.worker).Err()
}

// leases reads every worker's last renewal (unix ms) by id.
func (s *Store) leases(ctx context.Context) (map[string]int64, error) {
	zs, err := s.rdb.ZRangeWithScores(ctx, s.keys.leases(), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(zs))
	for _, z := range zs {
		if id, ok := z.Member.(string); ok {
			out[id] = int64(z.Score)
		}
	}
	return out, nil
}

// Release gives up attempt's hold on the task without an outcome (its
// worker is shutting down and the job goes back to its queue): the task
// stays working, unclaimed, for the job's next delivery to claim at once.
// ErrStale when another attempt holds it; NotOwned errors as Heartbeat.
func (s *Store) Release(ctx context.Context, ref Ref, attempt int64) error {
	return s.runKeys(ctx, releaseScript, []string{s.keys.Task(ref), s.keys.held(ref.Owner)}, s.nowMs(), attempt, ref.ID)
}
