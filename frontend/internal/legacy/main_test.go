package legacy_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend/internal/legacy"
	"github.com/mcpq/mcpq/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// env is the era's store on one backend (miniredis, redis-server or a
// cluster: redistest.Each).
type env struct {
	b *redistest.Backend
	s *legacy.Store
}

func newEnv(t *testing.T, b *redistest.Backend) *env {
	t.Helper()
	return &env{b: b, s: legacy.NewStore(b.Client, b.Prefix, nil)}
}

// ctx is a context bounded by the test's life.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

const principal = "alice@example.com"
