package legacy

import (
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"
)

// Store keeps the era's state in Redis: sessions (session.go) and the logs
// of their SSE streams (sselog.go). It is safe for concurrent use.
type Store struct {
	rdb  redis.UniversalClient
	keys Keys
	now  func() time.Time
}

// NewStore returns a Store over rdb whose names start with prefix (the task
// store's, taskstate.Keys.Prefix) and whose clock is now (nil: time.Now).
func NewStore(rdb redis.UniversalClient, prefix string, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rdb: rdb, keys: Keys{Prefix: prefix}, now: now}
}

// Keys returns the key builder the store uses.
func (s *Store) Keys() Keys { return s.keys }

// nowMs is the clock in unix milliseconds.
func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// The era's scripts (self-contained: they share no code with taskstate's).
var (
	//go:embed scripts/getstream.lua
	getStreamSource string
	// getStreamScript runs getstream.lua (Store.HoldsGetStream, SendTaskState).
	getStreamScript = redis.NewScript(getStreamSource)
	//go:embed scripts/append.lua
	appendSource string
	// appendScript runs append.lua (Store.AppendStreamEvent).
	appendScript = redis.NewScript(appendSource)
	//go:embed scripts/takestream.lua
	takeStreamSource string
	// takeStreamScript runs takestream.lua (Store.TakeStream).
	takeStreamScript = redis.NewScript(takeStreamSource)
)
