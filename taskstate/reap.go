package taskstate

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// reapBatch bounds the expired tasks taken from one owner's index per pass.
const reapBatch = 100

// Reap finalizes every task whose deadline has passed: its worker is told
// to stop (its next heartbeat sees the expiry), listeners get "expired",
// and the record and its index entry are removed. It returns how many
// tasks it reaped. Several reapers may run at once: each task is reaped once.
// It calls ended, when not nil, with each task it reaped or found already
// gone from Redis (its record expired unreaped), so what lives outside Redis
// (stored results) can end with it.
func (s *Store) Reap(ctx context.Context, ended func(Ref)) (int, error) {
	now := s.nowMs()
	reaped := 0
	iter := s.rdb.SScan(ctx, s.keys.owners(), 0, "", 100).Iterator()
	for iter.Next(ctx) {
		owner := iter.Val()
		idx := s.keys.Deadlines(owner)
		// Every id handled leaves the range (reaped, or re-indexed at a
		// later deadline), so pages repeat until the backlog is gone.
		for {
			ids, err := s.rdb.ZRangeArgs(ctx, redisZRangeByScore(idx, now)).Result()
			if err != nil {
				return reaped, err
			}
			for _, id := range ids {
				ref := Ref{Owner: owner, ID: id}
				err := s.runKeys(ctx, reapScript, append([]string{s.keys.Task(ref), s.keys.Live(owner), s.keys.held(owner), idx, s.keys.tasks(owner)},
					s.billingKeys(owner)...),
					now, id, s.keys.Events(ref), s.keys.Stops())
				switch {
				case err == nil:
					reaped++
					if ended != nil {
						ended(ref)
					}
				case errors.Is(err, ErrNotFound):
					if ended != nil {
						ended(ref)
					}
				case errors.Is(err, ErrIllegal):
				default:
					return reaped, err
				}
			}
			if len(ids) < reapBatch {
				break
			}
		}
	}
	return reaped, iter.Err()
}

// ReapOne is Reap for one task, at its deadline (its worker's timer): it
// ends expired at once rather than at the next reap pass. ErrIllegal when
// its deadline has not passed (its TTL was extended), ErrNotFound when it
// is gone, nil when it was reaped (by this call or before it: the
// deadline index no longer holds it).
func (s *Store) ReapOne(ctx context.Context, ref Ref) error {
	idx := s.keys.Deadlines(ref.Owner)
	err := s.runKeys(ctx, reapScript, append([]string{s.keys.Task(ref), s.keys.Live(ref.Owner), s.keys.held(ref.Owner), idx,
		s.keys.tasks(ref.Owner)}, s.billingKeys(ref.Owner)...), s.nowMs(), ref.ID, s.keys.Events(ref), s.keys.Stops())
	if errors.Is(err, ErrTerminal) {
		return nil
	}
	return err
}

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

// redisZRangeByScore is the ZRANGE BYSCORE -inf..max LIMIT 0 reapBatch query.
func redisZRangeByScore(key string, max int64) redis.ZRangeArgs {
	return redis.ZRangeArgs{Key: key, Start: "-inf", Stop: max, ByScore: true, Count: reapBatch}
}
