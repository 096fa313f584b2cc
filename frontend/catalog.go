package frontend

import (
	"context"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpq/mcpq/taskstate"
)

// catalog caches the tool catalog workers publish. A lookup of an unknown
// name reloads it early (at most every minReload), so a tool a new worker
// just published is callable at once without letting junk names hammer Redis.
type catalog struct {
	store     *taskstate.Store
	ttl       time.Duration
	mu        sync.Mutex
	defs      []taskstate.ToolDef
	byName    map[string]*taskstate.ToolDef
	loadedAt  time.Time
	minReload time.Duration
	// argSchemas holds each tool's resolved inputSchema by key, and
	// resolved each distinct schema text (see validate.go).
	argSchemas, resolved map[string]*jsonschema.Resolved
}

func newCatalog(store *taskstate.Store, ttl time.Duration) *catalog {
	return &catalog{store: store, ttl: ttl, minReload: 100 * time.Millisecond}
}

// list returns the catalog, reloading it when older than ttl.
func (c *catalog) list(ctx context.Context) ([]taskstate.ToolDef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.reloadLocked(ctx, c.ttl); err != nil {
		return nil, err
	}
	return c.defs, nil
}

// get returns the entry with the catalog key (taskstate.EntryKey) or nil.
func (c *catalog) get(ctx context.Context, name string) (*taskstate.ToolDef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.reloadLocked(ctx, c.ttl); err != nil {
		return nil, err
	}
	if d, ok := c.byName[name]; ok {
		return d, nil
	}
	if err := c.reloadLocked(ctx, c.minReload); err != nil {
		return nil, err
	}
	return c.byName[name], nil
}

func (c *catalog) reloadLocked(ctx context.Context, maxAge time.Duration) error {
	now := time.Now()
	if c.byName != nil && now.Sub(c.loadedAt) < maxAge {
		return nil
	}
	defs, err := c.store.Tools(ctx)
	if err != nil {
		return err
	}
	c.defs, c.byName, c.loadedAt = defs, make(map[string]*taskstate.ToolDef, len(defs)), now
	c.argSchemas, c.resolved = resolveSchemas(defs, c.resolved)
	for i := range defs {
		c.byName[defs[i].Key()] = &c.defs[i]
	}
	return nil
}
