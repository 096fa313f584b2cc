package access

import (
	"cmp"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/taskstate"
)

// Store reads and writes managed API keys and request buckets. It is safe
// for concurrent use.
type Store struct {
	rdb  redis.UniversalClient
	keys keys
	now  func() time.Time
}

// New returns a Store over rdb whose key names start with prefix (default
// taskstate.DefaultPrefix, as the task store's); now stamps new keys'
// CreatedAt (default time.Now). Buckets run on Redis's own clock.
func New(rdb redis.UniversalClient, prefix string, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rdb: rdb, keys: keys{prefix: cmp.Or(prefix, taskstate.DefaultPrefix)}, now: now}
}
