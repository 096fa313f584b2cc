package access

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"
)

// principalMap holds the principal mappings: field an OAuth principal
// (issuer#subject), value the existing principal it acts as. Type: hash.
func (k keys) principalMap() string { return k.prefix + "{principals}:map" }

// MapPrincipal maps from (an OAuth principal) to to (an existing one, such
// as an API key's), so from's requests act as to: its tasks, account and
// ledger (mcpq principals map; docs/auth.md).
func (s *Store) MapPrincipal(ctx context.Context, from, to string) error {
	if from == "" || to == "" || from == to {
		return errors.New("access: map needs two different, non-empty principals")
	}
	if err := s.rdb.HSet(ctx, s.keys.principalMap(), from, to).Err(); err != nil {
		return fmt.Errorf("access: map principal: %w", err)
	}
	return nil
}

// UnmapPrincipal removes from's mapping; ok false: it had none.
func (s *Store) UnmapPrincipal(ctx context.Context, from string) (bool, error) {
	n, err := s.rdb.HDel(ctx, s.keys.principalMap(), from).Result()
	if err != nil {
		return false, fmt.Errorf("access: unmap principal: %w", err)
	}
	return n > 0, nil
}

// Mapping is one principal mapping.
type Mapping struct{ From, To string }

// ListMappings returns every mapping, ordered by From.
func (s *Store) ListMappings(ctx context.Context) ([]Mapping, error) {
	m, err := s.rdb.HGetAll(ctx, s.keys.principalMap()).Result()
	if err != nil {
		return nil, fmt.Errorf("access: list principal mappings: %w", err)
	}
	out := make([]Mapping, 0, len(m))
	for from, to := range m {
		out = append(out, Mapping{From: from, To: to})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out, nil
}

// ResolvePrincipal returns the principal p is mapped to, or p itself. It
// implements frontend.PrincipalMapper.
func (s *Store) ResolvePrincipal(ctx context.Context, p string) (string, error) {
	to, err := s.rdb.HGet(ctx, s.keys.principalMap(), p).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return p, nil
	case err != nil:
		return "", fmt.Errorf("access: resolve principal: %w", err)
	}
	return to, nil
}
