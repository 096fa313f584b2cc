// Package billing holds mcpq's money apart from a task's life: every
// principal's account and ledger (credit, read, page, forward to a hook)
// and the types a task's settlement writes. The reservation and the
// settlement themselves run inside taskstate's transition scripts, which
// write the keys named here (Keys), so a task settles in the same script
// that ends it (docs/billing.md).
//
// Reserve-then-settle: create.lua reserves a priced tool's ceiling with
// the record: it moves the amount from the owner's balance to reserved,
// records the hold and appends a reserve entry to the ledger. Workers
// meter usage into the hold. The terminal transition (finish, cancel,
// claim's cancel, takeover, reap) settles: completed, cancelled and
// expired charge the usage, capped at the reservation, and release the
// rest; failed releases everything. The hold goes with the settlement, so
// a task settles once. For every account credited = balance + reserved +
// charged, and balance never goes below 0.
package billing

import (
	"errors"
	"fmt"
)

// ErrFunds: the owner's balance does not cover the tool's ceiling (a
// *FundsError says by how much).
var ErrFunds = errors.New("taskstate: insufficient funds")

// FundsError is ErrFunds with the amounts: the ceiling the call needed and
// the balance available when the create was refused.
type FundsError struct {
	Needed, Available int64
}

func (e *FundsError) Error() string {
	return fmt.Sprintf("taskstate: insufficient funds: the call reserves %d, %d available", e.Needed, e.Available)
}

// Is makes errors.Is(err, ErrFunds) hold.
func (e *FundsError) Is(target error) bool { return target == ErrFunds }

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

// Cost is a priced task's money in the account's units.
type Cost struct {
	// Reserved is the ceiling held when the task was created.
	Reserved int64 `json:"reserved"`
	// Charged is what the settlement charged (0 until it ended).
	Charged int64 `json:"charged"`
	// Released is what the settlement gave back (0 until it ended).
	Released int64 `json:"released"`
}

// Settlement is one reservation settled by a terminal transition a
// taskstate.Store ran (finish, cancel, claim, takeover, reap): what its
// Options.Settled is told.
type Settlement struct {
	// Tool is the catalog key of the task's tool.
	Tool string
	// Receipt is the settlement (charged + released = reserved).
	Receipt Receipt
}
