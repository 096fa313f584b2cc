package catalog

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ServingChange is what one call of Serve changed in the serving set.
type ServingChange struct {
	// Added are the keys that had no live worker before the call.
	Added []string
	// Expired are the keys whose last worker's time ran out.
	Expired []string
	// Announced are the lists (ListTools, ListPrompts, ListResources)
	// announced on Keys.Lists because of the change.
	Announced []string
}

// Serve records that a live worker serves the catalog entries keys
// until the time until (a heartbeat: a key's time only grows), drops the
// entries whose time ran out, and announces on Keys.Lists each list that
// gained or lost an entry. With no keys it only sweeps; any process may
// sweep, and each change is announced once, by the caller that made it.
func (s *Catalog) Serve(ctx context.Context, keys []string, until time.Time) (ServingChange, error) {
	now := s.now().UnixMilli()
	args := make([]any, 0, 2+len(keys))
	args = append(args, now, until.UnixMilli())
	for _, k := range keys {
		args = append(args, k)
	}
	var ch ServingChange
	v, err := servingScript.Run(ctx, s.rdb, []string{s.keys.serving()}, args...).Slice()
	if err != nil {
		return ch, err
	}
	if len(v) != 2 {
		return ch, fmt.Errorf("catalog: serving script returned %d values", len(v))
	}
	ch.Added, ch.Expired = strs(v[0]), strs(v[1])
	seen := map[string]bool{}
	for _, k := range append(append([]string{}, ch.Added...), ch.Expired...) {
		if l := listOf(k); l != "" && !seen[l] {
			seen[l] = true
			ch.Announced = append(ch.Announced, l)
		}
	}
	for _, l := range ch.Announced {
		if err := s.AnnounceListChanged(ctx, l); err != nil {
			return ch, err
		}
	}
	return ch, nil
}

// Sweep drops the entries whose last worker's time ran out and
// announces the lists that lost one (Serve with no keys).
func (s *Catalog) Sweep(ctx context.Context) (ServingChange, error) {
	return s.Serve(ctx, nil, time.Time{})
}

// servedUntil reads the serving set: each key's time (unix ms).
func (s *Catalog) servedUntil(ctx context.Context) (map[string]time.Time, error) {
	zs, err := s.rdb.ZRangeWithScores(ctx, s.keys.serving(), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(zs))
	for _, z := range zs {
		if k, ok := z.Member.(string); ok {
			out[k] = time.UnixMilli(int64(z.Score))
		}
	}
	return out, nil
}

// listOf is the list a catalog key belongs to ("" for completions).
func listOf(key string) string {
	kind, _, found := strings.Cut(key, ":")
	if !found {
		return ListTools
	}
	switch kind {
	case KindPrompt:
		return ListPrompts
	case KindResource, KindTemplate:
		return ListResources
	case KindCompletion:
		return ""
	}
	return ListTools
}

// strs reads a script's array of strings.
func strs(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		switch x := x.(type) {
		case string:
			out = append(out, x)
		case int64:
			out = append(out, strconv.FormatInt(x, 10))
		}
	}
	return out
}
