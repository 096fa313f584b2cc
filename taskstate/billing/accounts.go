package billing

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/proto"
)

// MaxPage bounds a ledger page (Ledger) and a forwarded batch (Forward).
const MaxPage = 500

// ErrBadCursor: a ledger cursor that is no entry id.
var ErrBadCursor = errors.New("taskstate: invalid cursor")

var (
	//go:embed scripts/credit.lua
	creditLua    string
	creditScript = redis.NewScript(creditLua)
	//go:embed scripts/forwarded.lua
	forwardedLua    string
	forwardedScript = redis.NewScript(forwardedLua)
)

// Accounts are the principals' accounts and ledgers on one Redis under
// one prefix (taskstate.Store.Accounts). It is safe for concurrent use.
type Accounts struct {
	rdb   redis.UniversalClient
	keys  Keys
	now   func() time.Time
	owner func(principal string) string
}

// New returns the accounts under prefix on rdb. clock stamps credits;
// owner maps a principal to the tag its keys carry (taskstate.OwnerTag).
func New(rdb redis.UniversalClient, prefix string, clock func() time.Time, owner func(principal string) string) *Accounts {
	return &Accounts{rdb: rdb, keys: Keys{Prefix: prefix}, now: clock, owner: owner}
}

// Credit adds amount (1..proto.MaxAmount) to the principal's balance and the
// ledger, and returns the account after it.
func (a *Accounts) Credit(ctx context.Context, principal string, amount int64) (Account, error) {
	if amount <= 0 || amount > proto.MaxAmount {
		return Account{}, fmt.Errorf("taskstate: a credit must be 1 to %d", int64(proto.MaxAmount))
	}
	owner := a.owner(principal)
	// Forward finds owners here.
	if err := a.rdb.SAdd(ctx, a.keys.Owners(), owner).Err(); err != nil {
		return Account{}, err
	}
	if err := creditScript.Run(ctx, a.rdb, []string{a.keys.Account(owner), a.keys.Ledger(owner)},
		a.now().UnixMilli(), principal, amount).Err(); err != nil {
		return Account{}, err
	}
	return a.Get(ctx, principal)
}

// Get reads the principal's account; one never credited reads as zero.
func (a *Accounts) Get(ctx context.Context, principal string) (Account, error) {
	v, err := a.rdb.HMGet(ctx, a.keys.Account(a.owner(principal)), "balance", "reserved", "charged", "credited").Result()
	if err != nil {
		return Account{}, err
	}
	n := func(i int) int64 {
		str, _ := v[i].(string)
		return parseInt(str)
	}
	acct := Account{Principal: principal, Balance: n(0), Reserved: n(1), Charged: n(2), Credited: n(3)}
	acct.Available = max(acct.Balance, 0)
	return acct, nil
}

var entryID = regexp.MustCompile(`^[0-9]{1,20}-[0-9]{1,20}$`)

// Ledger reads up to limit (1..MaxPage) entries of the principal's
// ledger, oldest first, after the entry id cursor ("" from the start).
// next is the cursor of the following page, "" when this one is the last.
func (a *Accounts) Ledger(ctx context.Context, principal, cursor string, limit int) (entries []proto.LedgerEntry, next string, err error) {
	start := "-"
	if cursor != "" {
		if !entryID.MatchString(cursor) {
			return nil, "", ErrBadCursor
		}
		start = "(" + cursor
	}
	limit = min(max(limit, 1), MaxPage)
	msgs, err := a.rdb.XRangeN(ctx, a.keys.Ledger(a.owner(principal)), start, "+", int64(limit)+1).Result()
	if err != nil {
		return nil, "", err
	}
	if len(msgs) > limit {
		msgs = msgs[:limit]
		next = msgs[limit-1].ID
	}
	return ledgerEntries(msgs), next, nil
}

// Forward offers every owner's ledger entries that forward has not
// acknowledged yet to forward (worker.LedgerHook's Forward has the
// contract), at most batch (1..MaxPage) per owner, and returns how many it
// acknowledged; the first error comes back once every owner was offered
// its entries.
func (a *Accounts) Forward(ctx context.Context, batch int,
	forward func(ctx context.Context, principal, owner string, entries []proto.LedgerEntry) error) (int, error) {
	// The ledger is the hook's outbox, read outside any script. The
	// owner's forwarded cursor moves only when forward returned nil, so a
	// failing or slow hook loses nothing and holds up no task; delivery is
	// at least once (after an error, or with two forwarders at once). A
	// hook error stops only that owner's batch.
	batch = min(max(batch, 1), MaxPage)
	forwarded := 0
	var firstErr error
	iter := a.rdb.SScan(ctx, a.keys.Owners(), 0, "", 100).Iterator()
	for iter.Next(ctx) {
		n, err := a.forwardOwner(ctx, iter.Val(), batch, forward)
		forwarded += n
		var hookErr *hookError
		if errors.As(err, &hookErr) {
			if firstErr == nil {
				firstErr = hookErr.err
			}
		} else if err != nil {
			return forwarded, err
		}
	}
	if err := iter.Err(); err != nil {
		return forwarded, err
	}
	return forwarded, firstErr
}

// hookError is forward's own error, which stops one owner's batch only.
type hookError struct{ err error }

func (e *hookError) Error() string { return e.err.Error() }

// forwardOwner offers one owner's unacknowledged entries to forward and
// moves its cursor past them when forward took them.
func (a *Accounts) forwardOwner(ctx context.Context, owner string, batch int,
	forward func(ctx context.Context, principal, owner string, entries []proto.LedgerEntry) error) (int, error) {
	cursorKey := a.keys.forwarded(owner)
	cursor, err := a.rdb.Get(ctx, cursorKey).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	start := "-"
	if cursor != "" {
		start = "(" + cursor
	}
	msgs, err := a.rdb.XRangeN(ctx, a.keys.Ledger(owner), start, "+", int64(batch)).Result()
	if err != nil || len(msgs) == 0 {
		return 0, err
	}
	entries := ledgerEntries(msgs)
	principal, _ := a.rdb.HGet(ctx, a.keys.Account(owner), "principal").Result()
	if err := forward(ctx, principal, owner, entries); err != nil {
		return 0, &hookError{err}
	}
	// 0: another forwarder moved the cursor meanwhile (offered twice, allowed).
	moved, err := forwardedScript.Run(ctx, a.rdb, []string{cursorKey}, cursor, entries[len(entries)-1].ID).Int64()
	if err != nil || moved == 0 {
		return 0, err
	}
	return len(entries), nil
}

func ledgerEntries(msgs []redis.XMessage) []proto.LedgerEntry {
	entries := make([]proto.LedgerEntry, len(msgs))
	for i, m := range msgs {
		str := func(k string) string { v, _ := m.Values[k].(string); return v }
		n := func(k string) int64 { return parseInt(str(k)) }
		e := proto.LedgerEntry{ID: m.ID, Kind: str("kind"), Task: str("task"), Tool: str("tool"), Outcome: str("outcome"),
			Amount: n("amount"), Reserved: n("reserved"), Charged: n("charged"), Released: n("released"), Usage: n("usage")}
		if at := n("at"); at > 0 {
			e.At = time.UnixMilli(at).UTC().Format(proto.TimeLayout)
		}
		entries[i] = e
	}
	return entries
}

// parseInt reads a counter field; absent (or not a number) is 0.
func parseInt(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
