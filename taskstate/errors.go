package taskstate

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers test them with errors.Is; frontend maps them to
// JSON-RPC codes in one place.
var (
	// ErrNotFound: no such task for this owner, or its TTL has passed.
	ErrNotFound = errors.New("taskstate: task not found")
	// ErrIllegal: the transition table refuses the change.
	ErrIllegal = errors.New("taskstate: illegal transition")
	// ErrStale: the write came from an attempt that no longer owns the task.
	ErrStale = errors.New("taskstate: stale attempt")
	// ErrExists: the task id is taken.
	ErrExists = errors.New("taskstate: task exists")
	// ErrCancelled: a cancel was requested (or the task is now cancelled).
	ErrCancelled = errors.New("taskstate: task cancelled")
	// ErrTerminal: the task already ended; nothing was written.
	ErrTerminal = errors.New("taskstate: task already terminal")
	// ErrExpired: the task's TTL has passed.
	ErrExpired = errors.New("taskstate: task expired")
	// ErrKeyReused: an input request key was issued before in the task's life.
	ErrKeyReused = errors.New("taskstate: input request key already used")
	// ErrLimit: the owner already has the allowed number of live tasks.
	ErrLimit = errors.New("taskstate: too many live tasks")
)

// Script return codes, as in scripts/prelude.lua.
const (
	codeOK = iota
	codeNotFound
	codeIllegal
	codeStale
	codeExists
	codeCancelled
	codeTerminal
	codeExpired
	codeKeyReused
	codeLimit
)

var codeErrors = map[int64]error{
	codeOK:        nil,
	codeNotFound:  ErrNotFound,
	codeIllegal:   ErrIllegal,
	codeStale:     ErrStale,
	codeExists:    ErrExists,
	codeCancelled: ErrCancelled,
	codeTerminal:  ErrTerminal,
	codeExpired:   ErrExpired,
	codeKeyReused: ErrKeyReused,
	codeLimit:     ErrLimit,
}

// codeErr turns a script return code into a sentinel error.
func codeErr(code int64) error {
	err, ok := codeErrors[code]
	if !ok {
		return fmt.Errorf("taskstate: unknown script code %d", code)
	}
	return err
}
