package frontend

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// catalog caches the tool catalog workers publish. A lookup of an unknown
// name, or of an entry no live worker serves, reloads it early (at most
// every minReload), so a tool a new worker just published is callable at
// once without letting junk names hammer Redis.
//
// Lists show only the entries a live worker serves (catalog.Entry.Served),
// judged against the clock at each request from the cached ServedUntil
// times: when one runs out, the catalog is read again (at most every
// minReload) before the entry is hidden, so an entry whose last worker died
// leaves the lists as soon as its time runs out, however long the cache
// lives, and costs no Redis call before. Lookups return every entry, so a
// call to an entry no worker serves gets a clear answer (run.go).
type catalogCache struct {
	store     *taskstate.Store
	log       *slog.Logger
	ttl       time.Duration
	mu        sync.Mutex
	defs      []catalog.Entry
	byName    map[string]*catalog.Entry
	loadedAt  time.Time
	minReload time.Duration
	// served holds the entries of defs served at servedAt, until
	// servedChange (the first time one of them runs out).
	served                 []catalog.Entry
	servedAt, servedChange time.Time
	// swept: this load's entries whose time ran out were swept.
	swept bool
	// argSchemas holds each tool's resolved inputSchema by key, and
	// resolved each distinct schema text (see validate.go).
	argSchemas, resolved map[string]*jsonschema.Resolved
}

func newCatalog(store *taskstate.Store, ttl time.Duration, log *slog.Logger) *catalogCache {
	return &catalogCache{store: store, ttl: ttl, minReload: 100 * time.Millisecond, log: log}
}

// list returns the entries a live worker serves, reloading the catalog
// when older than ttl.
func (c *catalogCache) list(ctx context.Context) ([]catalog.Entry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.reloadLocked(ctx, c.ttl); err != nil {
		return nil, err
	}
	now := c.store.Now()
	if c.served != nil && !now.Before(c.servedChange) {
		// An entry's time ran out by the cached heartbeat: read what the
		// workers wrote since before hiding it.
		if err := c.reloadLocked(ctx, c.minReload); err != nil {
			return nil, err
		}
	}
	if c.served == nil || !now.Before(c.servedChange) || now.Before(c.servedAt) {
		c.served, c.servedAt, c.servedChange = make([]catalog.Entry, 0, len(c.defs)), now, time.Time{}
		for _, d := range c.defs {
			if d.Served(now) {
				c.served = append(c.served, d)
				if c.servedChange.IsZero() || d.ServedUntil.Before(c.servedChange) {
					c.servedChange = d.ServedUntil
				}
			}
		}
		if c.servedChange.IsZero() {
			c.servedChange = now.Add(c.ttl) // nothing served: look again at the next reload
		}
		c.sweepLocked(ctx, now)
	}
	return c.served, nil
}

// get returns the entry with the catalog key (catalog.EntryKey) or nil,
// whether a live worker serves it or not.
func (c *catalogCache) get(ctx context.Context, name string) (*catalog.Entry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.reloadLocked(ctx, c.ttl); err != nil {
		return nil, err
	}
	if d, ok := c.byName[name]; ok && d.Served(c.store.Now()) {
		return d, nil
	}
	if err := c.reloadLocked(ctx, c.minReload); err != nil {
		return nil, err
	}
	return c.byName[name], nil
}

func (c *catalogCache) reloadLocked(ctx context.Context, maxAge time.Duration) error {
	now := time.Now()
	if c.byName != nil && now.Sub(c.loadedAt) < maxAge {
		return nil
	}
	defs, err := c.store.Catalog().Entries(ctx)
	if err != nil {
		return err
	}
	c.defs, c.byName, c.loadedAt = defs, make(map[string]*catalog.Entry, len(defs)), now
	c.served, c.swept = nil, false
	c.argSchemas, c.resolved = resolveSchemas(defs, c.resolved)
	for i := range defs {
		c.byName[defs[i].Key()] = &c.defs[i]
	}
	c.sweepLocked(ctx, c.store.Now())
	return nil
}

// sweepLocked sweeps the serving set once per load when an entry's last
// worker is gone and no worker swept it yet (the whole fleet of its queue
// may be down, or every worker): the sweep announces the change once.
func (c *catalogCache) sweepLocked(ctx context.Context, now time.Time) {
	if c.swept {
		return
	}
	for i := range c.defs {
		if d := &c.defs[i]; !d.ServedUntil.IsZero() && !d.Served(now) {
			c.swept = true
			if _, err := c.store.Catalog().Sweep(ctx); err != nil {
				c.log.Warn("sweep catalog", "err", err)
			}
			return
		}
	}
}
