package proto

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// _meta keys of mcpq's billing (docs/billing.md).
const (
	// MetaReceipt is, in a finished task's result _meta, the task's billing
	// receipt: {reserved, charged, released, usage, capped?, entries}.
	MetaReceipt = "io.mcpq/receipt"
	// MetaFunds is, in the tool error that refuses a call the caller's
	// balance does not cover, {needed, available}.
	MetaFunds = "io.mcpq/funds"
	// MetaIdempotencyKey in a tools/call request's _meta (or the
	// Idempotency-Key header) makes a retry of the call within the key's
	// TTL answer the task the first call made, reserving nothing again.
	MetaIdempotencyKey = "io.mcpq/idempotencyKey"
)

// MaxAmount bounds every amount (a credit, a ceiling, a usage report), so
// sums stay exact in Redis's Lua numbers.
const MaxAmount = 1_000_000_000_000

// Price is what a call of a tool reserves where billing is on
// (docs/billing.md), declared with the tool so a front end computes it
// from the arguments without running tool code: Base plus, for each named
// top-level argument, PerArgument times the argument's size, capped at Max
// (when above 0). An argument's size is a
// number's value rounded up (0 when negative), a string's length in
// bytes, an array's length, an object's member count, 1 for true and 0
// for false, null or a missing argument.
type Price struct {
	// Base is the fixed part of the ceiling, in units.
	Base int64 `json:"base,omitempty"`
	// PerArgument adds units per unit of an argument's size.
	PerArgument map[string]int64 `json:"perArgument,omitempty"`
	// Max caps the ceiling (0: no cap but MaxAmount).
	Max int64 `json:"max,omitempty"`
}

// Validate reports a price no call could be billed by.
func (p *Price) Validate() error {
	if p.Base < 0 || p.Base > MaxAmount || p.Max < 0 || p.Max > MaxAmount {
		return fmt.Errorf("price: base and max must be 0 to %d", int64(MaxAmount))
	}
	for name, per := range p.PerArgument {
		if per < 0 || per > MaxAmount {
			return fmt.Errorf("price: perArgument %q must be 0 to %d", name, int64(MaxAmount))
		}
	}
	return nil
}

// ErrPriceRange: a call's computed ceiling is above MaxAmount.
var ErrPriceRange = errors.New("proto: the call's price is out of range")

// Ceiling is the amount a call with args reserves.
func (p *Price) Ceiling(args json.RawMessage) (int64, error) {
	total := float64(p.Base)
	if len(p.PerArgument) > 0 && len(args) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(args, &m); err != nil {
			return 0, fmt.Errorf("price: arguments: %w", err)
		}
		for name, per := range p.PerArgument {
			total += float64(per) * argSize(m[name])
		}
	}
	if p.Max > 0 && total > float64(p.Max) {
		total = float64(p.Max)
	}
	if total > MaxAmount || math.IsNaN(total) {
		return 0, ErrPriceRange
	}
	return int64(total), nil
}

// argSize is an argument's size for Price.
func argSize(raw json.RawMessage) float64 {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return 0
	}
	switch x := v.(type) {
	case float64:
		return math.Max(0, math.Ceil(x))
	case string:
		return float64(len(x))
	case []any:
		return float64(len(x))
	case map[string]any:
		return float64(len(x))
	case bool:
		if x {
			return 1
		}
	}
	return 0
}

// LedgerEntry is one entry of a principal's billing ledger, as GET
// /v1/ledger lists it and a worker's ledger hook receives it.
type LedgerEntry struct {
	// ID is the entry's stream id: its place in the ledger, and the cursor
	// to read on after it.
	ID string `json:"id"`
	// Kind is credit, reserve, settle or release.
	Kind string `json:"kind"`
	// Task and Tool name the task (reserve, settle, release).
	Task string `json:"task,omitempty"`
	Tool string `json:"tool,omitempty"`
	// Outcome is how the task ended (settle, release): completed,
	// cancelled, expired or failed.
	Outcome string `json:"outcome,omitempty"`
	// Amount is a credit's amount.
	Amount int64 `json:"amount,omitempty"`
	// Reserved is the task's reservation (reserve, settle, release).
	Reserved int64 `json:"reserved,omitempty"`
	// Charged, Released and Usage are the settlement (settle, release).
	Charged  int64 `json:"charged,omitempty"`
	Released int64 `json:"released,omitempty"`
	Usage    int64 `json:"usage,omitempty"`
	// At is when the entry was made.
	At string `json:"at"`
}
