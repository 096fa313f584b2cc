package taskstate

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/proto"
)

// ForwardLedgers offers every owner's unforwarded ledger entries to
// forward (a worker's ledger hook: docs/billing.md, "Settlement hook"),
// at most batch (1..MaxLedgerPage) per owner per call, in ledger order,
// with the owner's principal ("" for an account written before accounts
// kept the name) and OwnerTag, and returns how many forward acknowledged.
// It never runs inside a script: the ledger is the hook's outbox. The
// owner's forwarded cursor (Keys.LedgerForwarded) moves only when forward
// returned nil, so a failing or slow hook loses nothing and holds up no
// task; delivery is at least once (after an error, or with two forwarders
// at once). A hook error stops nothing but that owner's batch; the first
// error is returned after every owner was offered its entries.
func (s *Store) ForwardLedgers(ctx context.Context, batch int,
	forward func(ctx context.Context, principal, owner string, entries []proto.LedgerEntry) error) (int, error) {
	batch = min(max(batch, 1), MaxLedgerPage)
	forwarded := 0
	var firstErr error
	iter := s.rdb.SScan(ctx, s.keys.Owners(), 0, "", 100).Iterator()
	for iter.Next(ctx) {
		owner := iter.Val()
		cursorKey := s.keys.LedgerForwarded(owner)
		cursor, err := s.rdb.Get(ctx, cursorKey).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return forwarded, err
		}
		start := "-"
		if cursor != "" {
			start = "(" + cursor
		}
		msgs, err := s.rdb.XRangeN(ctx, s.keys.Ledger(owner), start, "+", int64(batch)).Result()
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
		principal, _ := s.rdb.HGet(ctx, s.keys.Account(owner), "principal").Result()
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
