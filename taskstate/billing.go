package taskstate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/billing"
	"github.com/redis/go-redis/v9"
)

// Billing is reserve-then-settle (package billing, docs/billing.md):
// create.lua reserves, meter.lua meters and the terminal transition
// settles through the prelude's settle(), on the keys billing.Keys names.

// billingKeys are KEYS[4..6] of the scripts that may end a task (liveKeys).
func (s *Store) billingKeys(owner string) []string {
	return []string{s.keys.billing().Account(owner), s.keys.Holds(owner), s.keys.billing().Ledger(owner)}
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
	res, err := s.run(ctx, meterScript, []string{s.keys.Task(ref), s.keys.Holds(ref.Owner)},
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
			return "", &billing.FundsError{Needed: needed, Available: available}
		case code == codeReplayed && len(x) == 2:
			id, _ := x[1].(string)
			return id, errReplayed
		}
		return "", codeErr(code)
	}
	return "", fmt.Errorf("taskstate: create returned %T", v)
}
