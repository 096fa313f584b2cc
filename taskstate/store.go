package taskstate

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/taskstate/billing"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/series"
)

// Options configure a Store. The zero value is usable.
type Options struct {
	// Prefix starts every key name. Default DefaultPrefix ("mcpq:").
	Prefix string
	// Clock returns the current time. Default time.Now.
	Clock func() time.Time
	// ExpiryGrace is how long a record outlives its TTL in Redis before
	// Redis deletes it (the store already answers ErrNotFound at the TTL).
	// Default 1 minute.
	ExpiryGrace time.Duration
	// LostAfter is how long a running task may go without a worker
	// heartbeat before its delivery counts as lost: Get says so and the
	// takeover scan runs it again (default 10s; workers heartbeat every
	// few seconds).
	LostAfter time.Duration
	// CancelGrace is how long a worker holding a task gets to end it after
	// its cancel was acknowledged, before the takeover scan ends it
	// "cancelled" itself (default 2s; a live worker ends it at once).
	CancelGrace time.Duration
	// WaitReplicas, when above 0, makes Create, Answer and RequestCancel
	// wait for that many replicas to confirm their write (Redis WAIT, on
	// the same connection; see wait.go) and return a *ReplicaError when
	// fewer do within WaitTimeout. Default 0: no wait.
	WaitReplicas int
	// WaitTimeout bounds that wait (default 1s).
	WaitTimeout time.Duration
	// Settled, when set, is called with each reservation a terminal
	// transition run through this store settled (finish, cancel, claim,
	// takeover, reap;
	// settled.go), after the script returned, on the caller's goroutine.
	// It must be fast: metrics counters. Default nil.
	Settled func(billing.Settlement)
	// Series, when set, is told what the store's transitions end and
	// settle (a cancel that ends a task no worker held; each settlement),
	// for the operator view's numbers over time (package series). Default
	// nil: not counted.
	Series *series.Recorder
	// Worker, when set, is the id of the worker this store claims tasks
	// for: Claim records it in the task and in the attempt's timeline entry
	// (package timeline), its lease in the catalog says it lives, and the takeover scan keeps
	// a task whose worker's lease is live (catalog.Catalog.Lease). Default "": claims
	// name no worker (a front end's store).
	Worker string
	// NoFunctions: EVALSHA even where Redis has functions (functions.go).
	// Default false: a Redis 7 or later runs them as a function library.
	NoFunctions bool
}

// Defaults of Options.LostAfter and Options.CancelGrace.
const (
	DefaultLostAfter   = 10 * time.Second
	DefaultCancelGrace = 2 * time.Second
)

// Store reads and changes task records. It is safe for concurrent use.
type Store struct {
	rdb      redis.UniversalClient
	keys     Keys
	catalog  *catalog.Catalog
	accounts *billing.Accounts
	now      func() time.Time
	grace    time.Duration
	lost     time.Duration
	// cancelGrace is Options.CancelGrace.
	cancelGrace time.Duration
	// waitReplicas and waitTimeout are Options.WaitReplicas and WaitTimeout.
	waitReplicas int
	waitTimeout  time.Duration
	// settled is Options.Settled.
	settled func(billing.Settlement)
	// series is Options.Series.
	series *series.Recorder
	// worker is Options.Worker.
	worker string
	// owners remembers owners already in Keys.owners, to add each once.
	owners sync.Map
	// fns chooses between FCALL and EVALSHA (functions.go).
	fns *functions
}

// New returns a Store over rdb.
func New(rdb redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.ExpiryGrace == 0 {
		opts.ExpiryGrace = time.Minute
	}
	if opts.LostAfter <= 0 {
		opts.LostAfter = DefaultLostAfter
	}
	if opts.CancelGrace <= 0 {
		opts.CancelGrace = DefaultCancelGrace
	}
	if opts.WaitTimeout <= 0 {
		opts.WaitTimeout = defaultWaitTimeout
	}
	opts.WaitTimeout = max(opts.WaitTimeout, time.Millisecond)
	return &Store{rdb: rdb, keys: Keys{Prefix: opts.Prefix}, now: opts.Clock, grace: opts.ExpiryGrace,
		lost: opts.LostAfter, cancelGrace: opts.CancelGrace, waitReplicas: opts.WaitReplicas, waitTimeout: opts.WaitTimeout,
		settled: opts.Settled, series: opts.Series, worker: opts.Worker, catalog: catalog.New(rdb, opts.Prefix, opts.Clock),
		accounts: billing.New(rdb, opts.Prefix, opts.Clock, OwnerTag), fns: &functions{off: opts.NoFunctions}}
}

// Accounts returns the principals' billing accounts and ledgers on the
// store's Redis, prefix and clock.
func (s *Store) Accounts() *billing.Accounts { return s.accounts }

// Catalog returns the shared catalog on the store's Redis, prefix and clock.
func (s *Store) Catalog() *catalog.Catalog { return s.catalog }

// Keys returns the key builder the store uses.
func (s *Store) Keys() Keys { return s.keys }

// Now returns the store clock's current time.
func (s *Store) Now() time.Time { return s.now() }

// nowMs is the clock in unix milliseconds, the form scripts take.
func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// runCode runs a script on the task's record that returns a single code
// and maps it to an error.
func (s *Store) runCode(ctx context.Context, sc *script, ref Ref, args ...any) error {
	return s.runKeys(ctx, sc, []string{s.keys.Task(ref)}, args...)
}

// liveKeys are the keys of a script that may end the task: the record, the
// owner's live index and held index, and the owner's account, holds and
// ledger (the prelude's settle_task).
func (s *Store) liveKeys(ref Ref) []string {
	return append([]string{s.keys.Task(ref), s.keys.Live(ref.Owner), s.keys.held(ref.Owner)}, s.billingKeys(ref.Owner)...)
}

// runKeys is runCode for scripts with more keys (all in the owner's slot).
func (s *Store) runKeys(ctx context.Context, sc *script, keys []string, args ...any) error {
	return s.replyErr(s.run(ctx, sc, keys, args...))
}

// replyErr is a script reply's error, or the error of its return code.
func (s *Store) replyErr(reply *redis.Cmd) error {
	code, err := s.scriptCode(reply)
	if err != nil {
		return err
	}
	return codeErr(code)
}
