package client

import (
	"context"
	"errors"
	"sort"
	"time"
)

// Resume re-attaches to every task of this client's server (c.URL) in the
// journal: it drops entries past their TTL and those the server answers
// -32602 for (expired or unknown), and returns a Handle for each of the
// others, finished or not, with its answered input keys restored and its
// current state in Last (when the server could be reached). Follow or Wait
// on them; Wait drops an entry once it delivered the task's outcome.
func (c *Client) Resume(ctx context.Context) ([]*Handle, error) {
	if c.Journal == nil {
		return nil, errors.New("resume: the client has no journal")
	}
	entries, err := c.Journal.List(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(a, b int) bool { return entries[a].CreatedAt.Before(entries[b].CreatedAt) })
	now := time.Now()
	var out []*Handle
	for _, e := range entries {
		if e.Server != c.URL {
			continue
		}
		if e.Expired(now) {
			if err := c.Journal.Delete(ctx, e.Server, e.TaskID); err != nil {
				return out, err
			}
			continue
		}
		h := c.Attach(e.TaskID, e.Tool, e.Answers)
		if _, err := h.Get(ctx); errors.Is(err, CodeInvalidParams) {
			if err := c.Journal.Delete(ctx, e.Server, e.TaskID); err != nil {
				return out, err
			}
			continue
		} else if ctx.Err() != nil {
			return out, ctx.Err()
		}
		out = append(out, h)
	}
	return out, nil
}
