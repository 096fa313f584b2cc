package catalog

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// linked is the resources one owner (a principal's tag,
// taskstate.OwnerTag) may read because a task of theirs linked them:
// member the URI, score until when (unix ms). Type: sorted set.
func (k Keys) linked(owner string) string { return k.Prefix + "{" + owner + "}:linked" }

// GrantRead lets owner read uris until until (a resource_link of a task's
// result that a worker serves only to the principal whose task linked it,
// such as an upstream MCP server's; worker/upstream). A later grant of the
// same URI extends it, never shortens it; grants past until are dropped
// as the owner's set is written.
func (s *Catalog) GrantRead(ctx context.Context, owner string, uris []string, until time.Time) error {
	if len(uris) == 0 {
		return nil
	}
	key, at := s.keys.linked(owner), until.UnixMilli()
	members := make([]redis.Z, len(uris))
	for i, u := range uris {
		members[i] = redis.Z{Score: float64(at), Member: u}
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAddGT(ctx, key, members...)
		p.ZRemRangeByScore(ctx, key, "-inf", "("+strconv.FormatInt(s.now().UnixMilli(), 10))
		return nil
	})
	if err != nil {
		return err
	}
	last, err := s.rdb.ZRangeWithScores(ctx, key, -1, -1).Result()
	if err != nil || len(last) == 0 {
		return err
	}
	return s.rdb.PExpireAt(ctx, key, time.UnixMilli(int64(last[0].Score))).Err()
}

// MayRead reports whether a task of owner linked uri and the grant holds.
func (s *Catalog) MayRead(ctx context.Context, owner, uri string) (bool, error) {
	at, err := s.rdb.ZScore(ctx, s.keys.linked(owner), uri).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return int64(at) > s.now().UnixMilli(), nil
}
