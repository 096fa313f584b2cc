package frontend

import (
	"sync"
	"time"
)

// grantCache keeps verified grants by token hash, at most size of them, so
// a token is verified (or introspected) once, not on every request. When
// full, expired grants go first, then arbitrary ones.
type grantCache struct {
	mu   sync.Mutex
	size int
	m    map[[32]byte]*grant
}

func newGrantCache(size int) *grantCache {
	return &grantCache{size: size, m: map[[32]byte]*grant{}}
}

// get returns the grant of token hash h while it holds at now, else nil.
func (c *grantCache) get(h [32]byte, now time.Time) *grant {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.m[h]
	if g == nil {
		return nil
	}
	if !now.Before(g.until) {
		delete(c.m, h)
		return nil
	}
	return g
}

func (c *grantCache) put(h [32]byte, g *grant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.size {
		now := time.Now()
		for k, v := range c.m {
			if !now.Before(v.until) {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < c.size {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[h] = g
}
