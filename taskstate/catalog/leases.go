package catalog

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// leaseKeep is how long a lease stays after its worker's last renewal
// before Lease prunes it: long past any lost-after.
const leaseKeep = time.Hour

// leases holds the liveness of every worker of the deployment: member the
// worker's id (taskstate.Options.Worker), score the unix ms of its last
// lease renewal (Lease). A claimed task names its worker, and the takeover
// scan takes a task back only once that worker's lease is lost-after old
// (taskstate's takeover). One key for the whole deployment, read apart
// from the task scripts, so on a cluster it may live in any slot. Type:
// sorted set.
func (k Keys) leases() string { return k.Prefix + "leases" }

// Lease renews the lease of worker: it is alive now. A renewal never moves
// the lease back (a write delayed by an outage carries an older time), and
// leases of workers gone for an hour are dropped on the way.
func (s *Catalog) Lease(ctx context.Context, worker string) error {
	now := s.now()
	pipe := s.rdb.Pipeline()
	pipe.ZAddGT(ctx, s.keys.leases(), redis.Z{Score: float64(now.UnixMilli()), Member: worker})
	pipe.ZRemRangeByScore(ctx, s.keys.leases(), "-inf", "("+strconv.FormatInt(now.Add(-leaseKeep).UnixMilli(), 10))
	_, err := pipe.Exec(ctx)
	return err
}

// Unlease drops worker's lease: it stopped, and the tasks it still names
// are anyone's to take back at once.
func (s *Catalog) Unlease(ctx context.Context, worker string) error {
	return s.rdb.ZRem(ctx, s.keys.leases(), worker).Err()
}

// Leases reads every worker's last renewal (unix ms) by id.
func (s *Catalog) Leases(ctx context.Context) (map[string]int64, error) {
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
