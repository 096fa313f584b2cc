package taskstate

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/mcpq/mcpq/taskstate/billing"
)

// DefaultPrefix is the key prefix used when Options.Prefix is empty.
const DefaultPrefix = "mcpq:"

// Keys builds every Redis key and channel name of tasks (internal/access
// and internal/queue build theirs under the same prefix). Names that
// belong to one principal carry its hash tag ({p...}), so all keys a
// script touches share one Redis Cluster slot and a lookup under another
// principal cannot address the record.
type Keys struct {
	// Prefix starts every name; tests use a unique prefix to run in parallel.
	Prefix string
}

// OwnerTag is the stable, opaque tag of a principal used in key names.
func OwnerTag(principal string) string {
	sum := sha256.Sum256([]byte(principal))
	return "p" + hex.EncodeToString(sum[:12])
}

// Task is the task record. Type: hash (fields in record.go).
func (k Keys) Task(ref Ref) string { return k.Prefix + "{" + ref.Owner + "}:task:" + ref.ID }

// TaskExtra is the companion of an ended task's record: its fields too
// long for a compact hash (record.go's mergeExtra). Type: string.
func (k Keys) TaskExtra(ref Ref) string {
	// The fields whose name or value is longer than a default redis.conf
	// keeps in a compact hash (64 bytes: the result, error, receipt, a long
	// statusMessage, input requests and answers), so the record itself
	// stays a listpack. The scripts' compact() writes it when a task ends,
	// with the record's expiry, and derives its name from Task (the same
	// name plus ":x"), so the two must stay in step; the record's field 'x'
	// says it exists. Value: each field as "<len>:<name><len>:<value>".
	return k.Task(ref) + ":x"
}

// Events is the task's pub/sub channel; each state change (a cancel request
// too) publishes the record's new version and state, the reaper "expired",
// workers their notifications (events.go). Type: pub/sub channel.
func (k Keys) Events(ref Ref) string { return k.Prefix + "{" + ref.Owner + "}:events:" + ref.ID }

// Deadlines indexes one owner's tasks that have a TTL: member task id,
// score the deadline (unix ms). The reaper walks it. Type: sorted set.
func (k Keys) Deadlines(owner string) string { return k.Prefix + "{" + owner + "}:deadlines" }

// billing names the billing keys under the same prefix (an owner's
// account and ledger, which the scripts that reserve and settle write).
func (k Keys) billing() billing.Keys { return billing.Keys{Prefix: k.Prefix} }

// owners lists the owner tags that have (or had) tasks, so the reaper and
// the recovery loop can find every owner's indexes (billing.Keys.Owners).
func (k Keys) owners() string { return k.billing().Owners() }

// tasks indexes one owner's tasks newest first: member task id, score
// createdAt (unix ms). "My tasks" pages through it. Type: sorted set.
func (k Keys) tasks(owner string) string { return k.Prefix + "{" + owner + "}:tasks" }

// Live indexes one owner's tasks that have not ended: field task id →
// its argument bytes, and 'total', their sum. Type: hash.
func (k Keys) Live(owner string) string {
	// HLEN - 1 is how many live tasks there are: the caps on live tasks
	// and on their argument bytes read it, and the recovery of stranded
	// tasks walks it. Before issue 31 the live tasks were a sorted set,
	// "{p…}:live", beside this hash (then Keys.ArgBytes); docs/deploy.md
	// says what an upgrade leaves of the set.
	return k.Prefix + "{" + owner + "}:live:args"
}

// held indexes one owner's tasks that a delivery holds (claimed, not yet
// ended or parked): member task id, score when to look at it next (unix
// ms): when its heartbeat would be lost-after old, or a cancel's grace
// runs out. The takeover scan walks it. Type: sorted set.
func (k Keys) held(owner string) string { return k.Prefix + "{" + owner + "}:held" }

// running holds one owner's tasks that run on queue (an mcpq queue name)
// while a per-principal share is in force (claim.go): member task id,
// score the unix ms until which the entry counts (the delivery's last
// claim or heartbeat plus lost-after), so the slot of a killed worker ages
// out on its own. The record's 'slot' field names the set its task is in,
// and the scripts that park, end or take back a task remove it from there
// (prelude.lua's free_slot). Type: sorted set.
func (k Keys) running(owner, queue string) string {
	return k.Prefix + "{" + owner + "}:running:" + queue
}

// Stops is where every task's cancel request and expiry is also announced
// (payload: the task id), so a worker follows all its running jobs with one
// subscription instead of one per job. Type: pub/sub channel.
func (k Keys) Stops() string { return k.Prefix + "stops" }

// Holds are one owner's open reservations: field "r:<task id>" →
// "<reserved> <reserve ledger entry id> <tool>", and "u:<task id>" → the
// metered usage reported so far. A task's fields go when it settles. Kept
// apart from the record so a record Redis expired before the reaper saw it
// still settles. Type: hash.
func (k Keys) Holds(owner string) string { return k.Prefix + "{" + owner + "}:holds" }

// idempotency maps one owner's idempotency key (its SHA-256, hex) to the
// task id it created, for the key's TTL. Type: string.
func (k Keys) idempotency(owner, keyHash string) string {
	return k.Prefix + "{" + owner + "}:idem:" + keyHash
}
