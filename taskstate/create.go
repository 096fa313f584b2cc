package taskstate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mcpq/mcpq/proto"
)

// CreateParams describe a new task.
type CreateParams struct {
	// ID is the task id (default NewID()). A caller that subscribes to the
	// task's events before creating it picks the id first.
	ID string
	// Principal is the owner's principal name; the record's key uses its tag.
	Principal string
	// Tool is the tool name and Arguments its arguments object.
	Tool      string
	Arguments json.RawMessage
	// ArgumentsRef, when set, is the object-store key (objstore) that holds
	// Arguments: the record keeps this key (field 'argsRef') in their place,
	// while MaxArgBytes still counts len(Arguments), their real size.
	ArgumentsRef string
	// TTLMs is the lifetime from creation; nil is unlimited.
	TTLMs *int64
	// PollIntervalMs is the suggested polling interval.
	PollIntervalMs int64
	// StatusMessage is the initial statusMessage.
	StatusMessage string
	// Capabilities are the creating request's client capabilities (JSON).
	Capabilities json.RawMessage
	// MaxLive caps the owner's tasks that have not ended (0: no cap);
	// Create answers ErrLimit at the cap.
	MaxLive int
	// MaxArgBytes caps the argument bytes the owner's live tasks hold
	// together, these arguments included (0: no cap); Create answers
	// ErrArgsLimit past it (the count is in Keys.Live).
	MaxArgBytes int64
	// Reserve, when not nil, is the ceiling to reserve from the owner's
	// account with the record (billing.go). Create answers a *FundsError
	// (ErrFunds) when the balance does not cover it; nothing is written then.
	Reserve *int64
	// IdempotencyKey, when not empty, names the call for IdempotencyTTL
	// (capped at TTLMs): a Create with the same key and owner within it
	// writes nothing and returns the record of the task the first one made
	// (its Ref.ID is not ID then).
	IdempotencyKey string
	IdempotencyTTL time.Duration
	// Job, when not nil, is sent in the same round trip, after the record
	// (Job). When the record is written but the job is not, Create returns
	// the record and a *JobError. When the record is refused (ErrLimit,
	// ErrExists) the job may still be queued; a worker's claim finds no
	// record and drops it.
	Job Job
	// Owner is OwnerTag(Principal), if the caller has it; empty: computed.
	Owner string
	// Listening, when not nil, is set to whether the task's events channel
	// (Keys.Events) had a subscriber in Redis when the record was written: a
	// subscription started before Create (Hub.Start) but not yet confirmed
	// then misses no event of the task. false when Redis was not asked (a
	// Redis Cluster, or Options.WaitReplicas without a Job): a caller then
	// reads the record once its subscription is confirmed.
	Listening *bool
}

// Create writes a new task record in status working with a fresh id and
// returns it. When Create returns, a Get for the id succeeds. With
// Options.WaitReplicas, a record fewer replicas confirmed comes back with a
// *ReplicaError.
func (s *Store) Create(ctx context.Context, p CreateParams) (*Record, error) {
	now := s.now()
	ms := now.UnixMilli()
	if p.TTLMs != nil && *p.TTLMs <= 0 {
		return nil, fmt.Errorf("taskstate: ttlMs must be positive, got %d", *p.TTLMs)
	}
	if p.ID == "" {
		p.ID = NewID()
	}
	ref := Ref{Owner: p.Owner, ID: p.ID}
	if ref.Owner == "" {
		ref.Owner = OwnerTag(p.Principal)
	}
	args := p.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	// The reaper and the recovery loop find owners here; idempotent, so
	// written before the task, once per owner and process.
	if _, seen := s.owners.Load(ref.Owner); !seen {
		if err := s.rdb.SAdd(ctx, s.keys.owners(), ref.Owner).Err(); err != nil {
			return nil, err
		}
		s.owners.Store(ref.Owner, struct{}{})
	}
	caps := p.Capabilities
	if len(caps) == 0 {
		caps = json.RawMessage("{}")
	}
	keys := []string{s.keys.Task(ref), s.keys.Live(ref.Owner), s.keys.Deadlines(ref.Owner), s.keys.tasks(ref.Owner)}
	reserve, idemTTL := "", ""
	if p.Reserve != nil {
		if *p.Reserve < 0 || *p.Reserve > proto.MaxAmount {
			return nil, fmt.Errorf("taskstate: a reservation must be 0 to %d, got %d", int64(proto.MaxAmount), *p.Reserve)
		}
		reserve = strconv.FormatInt(*p.Reserve, 10)
	}
	if p.Reserve != nil || p.IdempotencyKey != "" {
		keys = append(keys, s.billingKeys(ref.Owner)...)
	}
	if p.IdempotencyKey != "" {
		d := p.IdempotencyTTL
		if p.TTLMs != nil {
			d = min(d, time.Duration(*p.TTLMs)*time.Millisecond)
		}
		if d < time.Millisecond {
			return nil, fmt.Errorf("taskstate: idempotency TTL must be at least 1ms, got %s", d)
		}
		sum := sha256.Sum256([]byte(p.IdempotencyKey))
		keys = append(keys, s.keys.idempotency(ref.Owner, hex.EncodeToString(sum[:])))
		idemTTL = strconv.FormatInt(d.Milliseconds(), 10)
	}
	// The script's ARGV, each one a pointer into one allocation: an int64
	// or a string put in an interface is allocated on its own, fifteen
	// allocations a create (go-redis writes *string and *int64 as their
	// values).
	a := &createArgv{ms: ms, principal: p.Principal, tool: p.Tool, poll: p.PollIntervalMs,
		status: p.StatusMessage, id: ref.ID, maxLive: p.MaxLive, maxArgBytes: p.MaxArgBytes,
		reserve: reserve, idemTTL: idemTTL, argLen: len(args)}
	a.argv = [...]any{&a.ms, &a.principal, &a.tool, []byte(args), &a.none, &a.poll, &a.status, &a.none,
		[]byte(caps), &a.id, &a.none, &a.maxLive, &a.maxArgBytes, &a.reserve, &a.idemTTL, &a.argLen}
	if p.TTLMs != nil { // ttlMs, the key's expiry and the deadline; "" for none
		a.ttl, a.expireAt, a.deadline = *p.TTLMs, ms+*p.TTLMs+s.grace.Milliseconds(), ms+*p.TTLMs
		a.argv[4], a.argv[7], a.argv[10] = &a.ttl, &a.expireAt, &a.deadline
	}
	argv := a.argv[:15]
	if p.ArgumentsRef != "" { // the key in their place, their size to count (ARGV[16])
		a.argRef = p.ArgumentsRef
		argv[3] = &a.argRef
		argv = a.argv[:16]
	}
	var err, jobErr error
	var replayed string
	if p.Listening != nil {
		*p.Listening = false // until Redis says otherwise
	}
	if p.Job != nil || (p.Listening != nil && s.waitReplicas <= 0) {
		var watch string
		if p.Listening != nil {
			watch = s.keys.Events(ref)
		}
		replayed, err, jobErr = s.runWithJob(ctx, p.Job, keys, watch, p.Listening, argv...)
	} else {
		reply, replicaErr := s.runWaited(ctx, createScript, keys, argv...)
		if replayed, err = createReply(reply); err == nil {
			err = replicaErr
		}
	}
	if errors.Is(err, errReplayed) {
		return s.Get(ctx, Ref{Owner: ref.Owner, ID: replayed})
	}
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		return nil, err
	}
	t := time.UnixMilli(ms)
	rec := &Record{Ref: ref, Status: proto.StatusWorking, StatusMessage: p.StatusMessage, CreatedAt: t,
		LastUpdatedAt: t, TTLMs: p.TTLMs, PollIntervalMs: p.PollIntervalMs, Principal: p.Principal,
		Tool: p.Tool, Arguments: args, ArgumentsRef: p.ArgumentsRef, Capabilities: caps}
	if p.ArgumentsRef != "" {
		rec.Arguments = nil // as a Get would read it
	}
	if jobErr != nil {
		return rec, &JobError{Err: jobErr}
	}
	return rec, err // nil, or a *ReplicaError (Options.WaitReplicas): written, not confirmed
}

// createArgv holds the create script's ARGV (Create) in one allocation.
type createArgv struct {
	ms, poll, maxArgBytes, ttl, expireAt, deadline int64
	maxLive, argLen                                int
	principal, tool, status, id, reserve, idemTTL  string
	none, argRef                                   string
	argv                                           [16]any
}
