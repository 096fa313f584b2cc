package taskstate

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/proto"
)

// ForwardLedgers offers every owner's ledger entries that forward has not
// acknowledged yet to forward (worker.LedgerHook's Forward has the
// contract), at most batch (1..MaxLedgerPage) per owner, and returns how
// many it acknowledged; the first error comes back once every owner was
// offered its entries.
func (s *Store) ForwardLedgers(ctx context.Context, batch int,
	forward func(ctx context.Context, principal, owner string, entries []proto.LedgerEntry) error) (int, error) {
	// The ledger is the hook's outbox, read outside any script. The
	// owner's forwarded cursor (keys.ledgerForwarded) moves only when
	// forward returned nil, so a failing or slow hook loses nothing and
	// holds up no task; delivery is at least once (after an error, or with
	// two forwarders at once). A hook error stops only that owner's batch.
	batch = min(max(batch, 1), MaxLedgerPage)
	forwarded := 0
	var firstErr error
	iter := s.rdb.SScan(ctx, s.keys.owners(), 0, "", 100).Iterator()
	for iter.Next(ctx) {
		owner := iter.Val()
		cursorKey := s.keys.ledgerForwarded(owner)
		cursor, err := s.rdb.Get(ctx, cursorKey).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return forwarded, err
		}
		start := "-"
		if cursor != "" {
			start = "(" + cursor
		}
		msgs, err := s.rdb.XRangeN(ctx, s.keys.ledger(owner), start, "+", int64(batch)).Result()
		if err != nil {
			return forwarded, err
		}
		if len(msgs) == 0 {
			continue
		}
		entries := make([]proto.LedgerEntry, len(msgs))
		for i, m := range msgs {
			entries[i] = ledgerEntry(m)
		}
		principal, _ := s.rdb.HGet(ctx, s.keys.account(owner), "principal").Result()
		if err := forward(ctx, principal, owner, entries); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		err = s.runKeys(ctx, forwardedScript, []string{cursorKey}, cursor, entries[len(entries)-1].ID)
		switch {
		case err == nil:
			forwarded += len(entries)
		case errors.Is(err, ErrStale): // another forwarder moved it: offered twice, allowed
		default:
			return forwarded, err
		}
	}
	if err := iter.Err(); err != nil {
		return forwarded, err
	}
	return forwarded, firstErr
}
