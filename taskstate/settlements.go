package taskstate

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// LedgerHook forwards billing to an external payment system (docs/billing.md,
// "Settlement hook"). It never runs inside a script: the ledger is its
// outbox. ForwardLedgers offers each owner's entries after the owner's
// forwarded cursor (Keys.LedgerForwarded) and moves the cursor only when
// Forward returned nil, so a failing or slow hook loses nothing and holds
// up no task. Delivery is at least once: an entry may be offered again
// (after an error, or by two forwarders at once); its ID is unique and
// time-ordered, the key to drop a repeat by.
type LedgerHook interface {
	// Forward receives entries of one principal's ledger in ledger order,
	// oldest first. principal is empty for an account written before
	// accounts kept the name; owner is its OwnerTag.
	Forward(ctx context.Context, principal, owner string, entries []LedgerEntry) error
}

// ForwardLedgers offers every owner's unforwarded ledger entries to hook,
// at most batch (1..MaxLedgerPage) per owner per call, and returns how many
// the hook acknowledged. A hook error stops nothing but that owner's
// batch; the first error is returned after every owner was offered its
// entries.
func (s *Store) ForwardLedgers(ctx context.Context, hook LedgerHook, batch int) (int, error) {
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
		entries := make([]LedgerEntry, len(msgs))
		for i, m := range msgs {
			entries[i] = ledgerEntry(m)
		}
		principal, _ := s.rdb.HGet(ctx, s.keys.Account(owner), "principal").Result()
		if err := hook.Forward(ctx, principal, owner, entries); err != nil {
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
