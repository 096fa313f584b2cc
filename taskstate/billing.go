package taskstate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/redis/go-redis/v9"
)

// Billing is reserve-then-settle (docs/billing.md). create.lua reserves a
// priced tool's ceiling with the record: it moves the amount from the
// owner's balance to reserved, records the hold (Keys.Holds) and appends
// a reserve entry to the ledger. Workers meter usage into the hold
// (meter.lua). The terminal transition (finish, cancel, claim's cancel,
// takeover, reap) settles in the same script, through the prelude's
// settle(): completed, cancelled and expired charge the usage, capped at
// the reservation, and release the rest; failed releases everything. The
// hold goes with the settlement, so a task settles once. For every account
// credited = balance + reserved + charged, and balance never goes below 0.

// FundsError is ErrFunds with the amounts: the ceiling the call needed and
// the balance available when create.lua refused it.
type FundsError struct {
	Needed, Available int64
}

func (e *FundsError) Error() string {
	return fmt.Sprintf("taskstate: insufficient funds: the call reserves %d, %d available", e.Needed, e.Available)
}

// Is makes errors.Is(err, ErrFunds) hold.
func (e *FundsError) Is(target error) bool { return target == ErrFunds }

// Receipt is what a task's settlement did, kept in its record (field
// 'receipt', written by the prelude's settle()) and shown with the task.
type Receipt struct {
	// Reserved is the ceiling reserved at create.
	Reserved int64 `json:"reserved"`
	// Charged is what the task cost; Released went back to the balance.
	Charged  int64 `json:"charged"`
	Released int64 `json:"released"`
	// Usage is the metered usage reported; Capped says it was above
	// Reserved (only Reserved is charged).
	Usage  int64 `json:"usage"`
	Capped bool  `json:"capped,omitempty"`
	// Entries are the ledger entry ids: the reserve, then the settle or release.
	Entries []string `json:"entries"`
}

// Account is a principal's billing account, in integer units.
type Account struct {
	// Principal owns the account.
	Principal string `json:"principal"`
	// Balance is neither reserved nor charged: what new reservations may
	// take. Available is the same amount, named for what it is to a caller.
	Balance   int64 `json:"balance"`
	Available int64 `json:"available"`
	// Reserved is held by tasks that have not ended.
	Reserved int64 `json:"reserved"`
	// Charged is what ended tasks cost; Credited is every credit ever
	// added. Credited = Balance + Reserved + Charged.
	Charged  int64 `json:"charged"`
	Credited int64 `json:"credited"`
}

// billingKeys are KEYS[4..6] of the scripts that may end a task (liveKeys).
func (s *Store) billingKeys(owner string) []string {
	return []string{s.keys.account(owner), s.keys.Holds(owner), s.keys.ledger(owner)}
}

// Credit adds amount (1..proto.MaxAmount) to the principal's balance and the
// ledger, and returns the account after it.
func (s *Store) Credit(ctx context.Context, principal string, amount int64) (Account, error) {
	if amount <= 0 || amount > proto.MaxAmount {
		return Account{}, fmt.Errorf("taskstate: a credit must be 1 to %d", int64(proto.MaxAmount))
	}
	owner := OwnerTag(principal)
	// The ledger forwarder (settlements.go) finds owners here.
	if err := s.rdb.SAdd(ctx, s.keys.owners(), owner).Err(); err != nil {
		return Account{}, err
	}
	if _, err := creditScript.Run(ctx, s.rdb, []string{s.keys.account(owner), s.keys.ledger(owner)},
		s.nowMs(), principal, amount).Slice(); err != nil {
		return Account{}, err
	}
	return s.Account(ctx, principal)
}

// Account reads the principal's account; one never credited reads as zero.
func (s *Store) Account(ctx context.Context, principal string) (Account, error) {
	v, err := s.rdb.HMGet(ctx, s.keys.account(OwnerTag(principal)), "balance", "reserved", "charged", "credited").Result()
	if err != nil {
		return Account{}, err
	}
	n := func(i int) int64 {
		str, _ := v[i].(string)
		return parseInt(str)
	}
	a := Account{Principal: principal, Balance: n(0), Reserved: n(1), Charged: n(2), Credited: n(3)}
	a.Available = max(a.Balance, 0)
	return a, nil
}

// Meter adds units of metered usage to the task for attempt and returns
// its usage so far and its reservation; reserved is -1 when the task holds
// none (a free tool, or billing off), and nothing is written then. It
// answers ErrStale, ErrTerminal, ErrExpired or ErrNotFound as the other
// worker writes do.
func (s *Store) Meter(ctx context.Context, ref Ref, attempt, units int64) (usage, reserved int64, err error) {
	if units <= 0 || units > proto.MaxAmount {
		return 0, 0, fmt.Errorf("taskstate: usage must be 1 to %d units, got %d", int64(proto.MaxAmount), units)
	}
	res, err := meterScript.Run(ctx, s.rdb, []string{s.keys.Task(ref), s.keys.Holds(ref.Owner)},
		s.nowMs(), attempt, units, ref.ID).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if err := codeErr(res[0]); err != nil {
		return 0, 0, err
	}
	if len(res) < 3 {
		return 0, 0, fmt.Errorf("taskstate: meter returned %d values", len(res))
	}
	return res[1], res[2], nil
}

// MaxLedgerPage bounds a ledger page.
const MaxLedgerPage = 500

var entryID = regexp.MustCompile(`^[0-9]{1,20}-[0-9]{1,20}$`)

// Ledger reads up to limit (1..MaxLedgerPage) entries of the principal's
// ledger, oldest first, after the entry id cursor ("" from the start).
// next is the cursor of the following page, "" when this one is the last.
func (s *Store) Ledger(ctx context.Context, principal, cursor string, limit int) (entries []proto.LedgerEntry, next string, err error) {
	start := "-"
	if cursor != "" {
		if !entryID.MatchString(cursor) {
			return nil, "", ErrBadCursor // the same answer as a bad task-list cursor
		}
		start = "(" + cursor
	}
	limit = min(max(limit, 1), MaxLedgerPage)
	msgs, err := s.rdb.XRangeN(ctx, s.keys.ledger(OwnerTag(principal)), start, "+", int64(limit)+1).Result()
	if err != nil {
		return nil, "", err
	}
	if len(msgs) > limit {
		msgs = msgs[:limit]
		next = msgs[limit-1].ID
	}
	entries = make([]proto.LedgerEntry, 0, len(msgs))
	for _, m := range msgs {
		entries = append(entries, ledgerEntry(m))
	}
	return entries, next, nil
}

func ledgerEntry(m redis.XMessage) proto.LedgerEntry {
	str := func(k string) string { v, _ := m.Values[k].(string); return v }
	n := func(k string) int64 { return parseInt(str(k)) }
	e := proto.LedgerEntry{ID: m.ID, Kind: str("kind"), Task: str("task"), Tool: str("tool"), Outcome: str("outcome"),
		Amount: n("amount"), Reserved: n("reserved"), Charged: n("charged"), Released: n("released"), Usage: n("usage")}
	if at := n("at"); at > 0 {
		e.At = formatTime(time.UnixMilli(at))
	}
	return e
}

// withReceipt puts the receipt under proto.MetaReceipt in the result's
// _meta (the result is kept as the worker wrote it; the receipt is added
// when the record is read). A result that is no JSON object stays as is.
func withReceipt(result, receipt json.RawMessage) json.RawMessage {
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil || r == nil {
		return result
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := r["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return result
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[proto.MetaReceipt] = receipt
	b, err := marshalRaw(meta)
	if err != nil {
		return result
	}
	r["_meta"] = b
	out, err := marshalRaw(r)
	if err != nil {
		return result
	}
	return out
}

// marshalRaw encodes m without HTML escaping, so the result's text comes
// back as the worker wrote it.
func marshalRaw(m map[string]json.RawMessage) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// createReply reads create.lua's answer: a code, or {FUNDS, needed,
// available} or {REPLAYED, task id}. replayed is the task id of a replay.
func createReply(cmd *redis.Cmd) (replayed string, err error) {
	v, err := cmd.Result()
	if err != nil {
		return "", err
	}
	switch x := v.(type) {
	case int64:
		return "", codeErr(x)
	case []any:
		code, _ := x[0].(int64)
		switch {
		case code == codeFunds && len(x) == 3:
			needed, _ := strconv.ParseInt(fmt.Sprint(x[1]), 10, 64)
			available, _ := strconv.ParseInt(fmt.Sprint(x[2]), 10, 64)
			return "", &FundsError{Needed: needed, Available: available}
		case code == codeReplayed && len(x) == 2:
			id, _ := x[1].(string)
			return id, errReplayed
		}
		return "", codeErr(code)
	}
	return "", fmt.Errorf("taskstate: create returned %T", v)
}
