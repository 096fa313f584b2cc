package series

import "github.com/redis/go-redis/v9"

// Move points r at another Redis (a test's way to let a failed flush's
// numbers go out on a live one).
func Move(r *Recorder, rdb redis.UniversalClient) *Recorder {
	r.rdb = rdb
	return r
}
