package access

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed ratelimit.lua
var rateSource string

// rateScript is ratelimit.lua: one request against a principal's bucket.
var rateScript = redis.NewScript(rateSource)

// Allow takes one token from the principal's bucket (rate per second,
// burst at most), shared by every front end. When none is left it answers
// false and how long until one is. The bucket runs on Redis's clock, not
// the Store's (ratelimit.lua says why).
func (s *Store) Allow(ctx context.Context, principal string, rate float64, burst int) (bool, time.Duration, error) {
	res, err := rateScript.Run(ctx, s.rdb, []string{s.keys.rate(principal)}, rate, burst).Slice()
	if err != nil {
		return false, 0, err
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("access: ratelimit returned %d values", len(res))
	}
	ok, _ := res[0].(int64)
	wait, _ := res[1].(int64)
	return ok == 1, time.Duration(wait) * time.Millisecond, nil
}
