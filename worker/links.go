package worker

import "context"

// GrantRead lets the principal who created the task read uris (resource
// links in its result, say) until the task expires (Config.MaxTTL from now
// when its TTL is unlimited), through a resource whose handler asks
// MayRead: a resource served only to whoever was given the link.
func (c *Call) GrantRead(ctx context.Context, uris ...string) error {
	until := c.record.Deadline()
	if until.IsZero() {
		until = c.store.Now().Add(c.worker.cfg.MaxTTL)
	}
	return c.store.Catalog().GrantRead(ctx, c.ref.Owner, uris, until)
}

// MayRead reports whether a task of the principal making this call (a
// resources/read) was granted uri with GrantRead, and the grant holds.
func (c *Call) MayRead(ctx context.Context, uri string) (bool, error) {
	return c.store.Catalog().MayRead(ctx, c.ref.Owner, uri)
}
