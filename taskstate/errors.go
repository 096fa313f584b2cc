package taskstate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpq/mcpq/taskstate/billing"
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
	// ErrArgsLimit: the owner's live tasks already hold the allowed
	// argument bytes (CreateParams.MaxArgBytes).
	ErrArgsLimit = errors.New("taskstate: live tasks hold too many argument bytes")
	// errReplayed: the idempotency key already made a task (create.lua;
	// Create answers that task instead).
	errReplayed = errors.New("taskstate: idempotency key replayed")
	// ErrBusy: the owner already runs its share of the queue; the task was
	// not claimed (Claim returns a *BusyError that names the job to run later).
	ErrBusy = errors.New("taskstate: the principal runs its share of the queue")
	// ErrHeld: another worker, alive as far as the store knows, holds the
	// task (a second delivery of its job, say after asynq's lease of the
	// first ran out during a Redis outage): the job is a no-op; should
	// that worker die, the takeover scan runs the task again.
	ErrHeld = errors.New("taskstate: another worker holds the task")
)

// NotOwned reports whether err says the writing delivery no longer owns
// the task: a newer attempt took it (ErrStale), or it ended, expired or is
// gone. The delivery then writes nothing more and stops.
func NotOwned(err error) bool {
	return errors.Is(err, ErrStale) || errors.Is(err, ErrTerminal) || errors.Is(err, ErrExpired) ||
		errors.Is(err, ErrNotFound)
}

// Script return codes. Scripts see them as Lua locals of the same names
// (luaCodes), so the two cannot drift apart.
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
	codeArgsLimit
	codeFunds
	codeReplayed
	codeBusy
	codeHeld
)

// scriptCodes is the one table of script return codes: the name scripts
// use, and the error the Go side turns the code into; the index is the code.
var scriptCodes = [...]struct {
	lua string
	err error
}{
	codeOK:        {"OK", nil},
	codeNotFound:  {"NOT_FOUND", ErrNotFound},
	codeIllegal:   {"ILLEGAL", ErrIllegal},
	codeStale:     {"STALE", ErrStale},
	codeExists:    {"EXISTS", ErrExists},
	codeCancelled: {"CANCELLED", ErrCancelled},
	codeTerminal:  {"TERMINAL", ErrTerminal},
	codeExpired:   {"EXPIRED", ErrExpired},
	codeKeyReused: {"KEY_REUSED", ErrKeyReused},
	codeLimit:     {"LIMIT", ErrLimit},
	codeArgsLimit: {"ARGS_LIMIT", ErrArgsLimit},
	codeFunds:     {"FUNDS", billing.ErrFunds},
	codeReplayed:  {"REPLAYED", errReplayed},
	codeBusy:      {"BUSY", ErrBusy},
	codeHeld:      {"HELD", ErrHeld},
}

// codeErr turns a script return code into a sentinel error.
func codeErr(code int64) error {
	if code < 0 || code >= int64(len(scriptCodes)) {
		return fmt.Errorf("taskstate: unknown script code %d", code)
	}
	return scriptCodes[code].err
}

// luaCodes renders scriptCodes as the Lua locals every script starts with.
func luaCodes() string {
	names := make([]string, len(scriptCodes))
	values := make([]string, len(scriptCodes))
	for i, c := range scriptCodes {
		names[i], values[i] = c.lua, strconv.Itoa(i)
	}
	return "local " + strings.Join(names, ", ") + " = " + strings.Join(values, ", ") + "\n"
}
