package taskstate

import (
	"slices"

	"github.com/mcpq/mcpq/proto"
)

// MergeExtra exposes mergeExtra to the external tests, which read records
// straight from Redis.
var MergeExtra = mergeExtra

// The key names only this package's scripts use, for the external tests
// that look at Redis itself.

func (k Keys) Account(owner string) string           { return k.billing().Account(owner) }
func (k Keys) Ledger(owner string) string            { return k.billing().Ledger(owner) }
func (k Keys) Held(owner string) string              { return k.held(owner) }
func (k Keys) Owners() string                        { return k.owners() }
func (k Keys) Running(owner, queue string) string    { return k.running(owner, queue) }
func (k Keys) Tasks(owner string) string             { return k.tasks(owner) }
func (k Keys) Idempotency(owner, hash string) string { return k.idempotency(owner, hash) }

// CopyTimeline gives dst the stored timeline of src.
func CopyTimeline(dst, src *Record) { dst.tl = src.tl }

// FormatTime and Allowed expose formatTime and allowed.
var (
	FormatTime = formatTime
	Allowed    = allowed
)

// AllStatuses is every status, StatusNew included, for exhaustive tests (a
// fresh slice each call).
func AllStatuses() []proto.TaskStatus { return slices.Clone(allStatuses) }

// ScriptPath says how the store runs its scripts (functions.go):
// "functions" (FCALL), "scripts" (EVALSHA), or "" before its first call
// decided.
func (s *Store) ScriptPath() string {
	switch s.fns.mode.Load() {
	case modeFunctions:
		return "functions"
	case modeScripts:
		return "scripts"
	}
	return ""
}

// LibraryName is the name of the scripts' function library.
func LibraryName() string { return libraryName() }
