package billing

// Keys names the billing keys under a key prefix (the task records'
// prefix: taskstate.Keys). Names that belong to one owner (a principal's
// tag, taskstate.OwnerTag) carry its hash tag, so the task scripts that
// reserve and settle touch them in the record's Redis Cluster slot.
type Keys struct {
	// Prefix starts every name.
	Prefix string
}

// Account is one owner's billing account: fields balance (neither
// reserved nor charged), reserved, charged and credited, and principal
// (its name, for a ledger hook); credited = balance + reserved + charged
// always. Type: hash.
func (k Keys) Account(owner string) string { return k.Prefix + "{" + owner + "}:account" }

// Ledger is one owner's append-only billing ledger: credit, reserve,
// settle and release entries (proto.LedgerEntry). Type: stream.
func (k Keys) Ledger(owner string) string { return k.Prefix + "{" + owner + "}:ledger" }

// Owners lists the owner tags that have (or had) tasks or an account: the
// reaper and takeover scans walk it, and Forward does. Type: set.
func (k Keys) Owners() string { return k.Prefix + "owners" }

// forwarded is the id of the last entry of one owner's ledger a hook
// acknowledged (Forward): the outbox cursor. Type: string.
func (k Keys) forwarded(owner string) string { return k.Ledger(owner) + ":forwarded" }
