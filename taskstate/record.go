package taskstate

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/billing"
	"github.com/mcpq/mcpq/taskstate/timeline"
)

// Ref names one task: its owner's tag (OwnerTag) and its id.
type Ref struct {
	// Owner is the owning principal's tag, as OwnerTag makes it.
	Owner string `json:"o"`
	// ID is the task id.
	ID string `json:"id"`
}

// Record is a decoded task record (the hash at Keys.Task).
type Record struct {
	// Ref names the task.
	Ref Ref
	// Status is the current status.
	Status proto.TaskStatus
	// StatusMessage is the human-readable progress.
	StatusMessage string
	// CreatedAt and LastUpdatedAt are the record's times.
	CreatedAt, LastUpdatedAt time.Time
	// TTLMs is the lifetime from CreatedAt; nil is unlimited.
	TTLMs *int64
	// PollIntervalMs is the suggested polling interval.
	PollIntervalMs int64
	// Principal is the owner's principal name.
	Principal string
	// Tool and Arguments are the call.
	Tool      string
	Arguments json.RawMessage
	// ArgumentsRef, when set, is the object-store key holding the call's
	// arguments (CreateParams.ArgumentsRef); Arguments is then empty.
	ArgumentsRef string
	// Attempt counts job deliveries that claimed the task.
	Attempt int64
	// Running is the attempt that holds the task now; 0 while queued or parked.
	Running int64
	// CancelRequested is set once tasks/cancel was accepted.
	CancelRequested bool
	// Heartbeat is the last sign of life of the worker holding the task.
	Heartbeat time.Time
	// Result is the CallToolResult JSON (completed).
	Result json.RawMessage
	// Error is the JSON-RPC error (failed).
	Error *proto.Error
	// Capabilities are the client capabilities of the request that created
	// the task (handlers ask only for input kinds they cover).
	Capabilities json.RawMessage
	// InputRequests are the pending input requests by key (input_required).
	InputRequests map[string]json.RawMessage
	// Answers are the input responses received so far, by key.
	Answers map[string]json.RawMessage
	// Checkpoint is the handler's last saved checkpoint.
	Checkpoint json.RawMessage
	// Resumes is the task's job sequence number: it counts the jobs issued
	// after the first, on a resume after input, a takeover from a lost
	// worker, a job over its principal's share or one handed back (the job
	// id carries it: internal/queue).
	Resumes int64
	// Lost counts the deliveries taken back from lost workers.
	Lost int64
	// Receipt is the task's billing receipt (JSON Receipt), written when a
	// reservation settled; the result of a completed task carries it in
	// its _meta under proto.MetaReceipt too.
	Receipt json.RawMessage
	// Version counts the state changes published on the task's events
	// channel (field 'version'; Event.Version), so a listener can tell an
	// event it already showed from a newer one.
	Version int64
	// tl is the field 'tl' as stored: Timeline decodes it when asked,
	// so a tasks/get, which never shows it, does not pay for it.
	tl string
	// StartedAt is when a delivery first claimed the task (field
	// 'startedAt'); zero while it never ran.
	StartedAt time.Time
	// Cost is the priced call's reservation and, once it settled, what was
	// charged and released (field 'cost'); nil for a free task.
	Cost *billing.Cost
}

// parseCost reads the field 'cost': "<reserved> <charged> <released>".
func parseCost(s string) *billing.Cost {
	f := strings.Fields(s)
	if len(f) != 3 {
		return nil
	}
	return &billing.Cost{Reserved: parseInt(f[0]), Charged: parseInt(f[1]), Released: parseInt(f[2])}
}

// Timeline is what happened to the task, oldest first (field 'tl';
// package timeline).
func (r *Record) Timeline() []timeline.Entry { return timeline.Parse(r.CreatedAt, r.tl) }

// Deadline is when the task expires; zero when unlimited.
func (r *Record) Deadline() time.Time {
	if r.TTLMs == nil {
		return time.Time{}
	}
	return r.CreatedAt.Add(time.Duration(*r.TTLMs) * time.Millisecond)
}

// Expired reports whether the TTL has passed at now.
func (r *Record) Expired(now time.Time) bool {
	d := r.Deadline()
	return !d.IsZero() && !now.Before(d)
}

func parseMs(s string) time.Time {
	ms := parseInt(s)
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// parseInt reads a counter field; absent (or not a number) is 0.
func parseInt(s string) int64 {
	if s == "" {
		return 0 // absent: no strconv error to allocate
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// errBadExtra: a record's companion (Keys.TaskExtra) is not what the
// scripts' compact() writes.
var errBadExtra = errors.New("taskstate: malformed record companion")

// mergeExtra adds to f the fields an ended task's record keeps in its
// companion (Keys.TaskExtra): "<len>:<name><len>:<value>" each, lengths in
// bytes, as the scripts' compact() writes them.
func mergeExtra(f map[string]string, x string) error {
	for x != "" {
		var k, v string
		var ok bool
		if k, x, ok = cutCounted(x); !ok {
			return errBadExtra
		}
		if v, x, ok = cutCounted(x); !ok {
			return errBadExtra
		}
		f[k] = v
	}
	return nil
}

// cutCounted splits "<len>:<text of len bytes><rest>" into text and rest.
func cutCounted(s string) (text, rest string, ok bool) {
	n, s, ok := strings.Cut(s, ":")
	if !ok {
		return "", "", false
	}
	l, err := strconv.Atoi(n)
	if err != nil || l < 0 || l > len(s) {
		return "", "", false
	}
	return s[:l], s[l:], true
}

// decodeRecord reads a record from its HGETALL fields; ok is false for an
// empty (missing) hash.
func decodeRecord(ref Ref, f map[string]string) (*Record, bool) {
	r, ok := &Record{Ref: ref}, false
	for k, v := range f {
		ok = r.decodeField(k, v) || ok
	}
	return r.decoded(ok)
}

// decodePairs is decodeRecord of fields given as name, value, name,
// value (a script's reply: no map built for it). The loop is decodeRecord's
// written out for a slice: an iterator over either would cost each read
// two allocations (BenchmarkGet, BenchmarkClaim).
func decodePairs(ref Ref, kv []string) (*Record, bool) {
	r, ok := &Record{Ref: ref}, false
	for i := 0; i+1 < len(kv); i += 2 {
		ok = r.decodeField(kv[i], kv[i+1]) || ok
	}
	return r.decoded(ok)
}

// decodeField sets what field k of the record's hash, of value v, says;
// it reports whether k is the status, the field every record has. An
// empty value reads as an absent field.
func (r *Record) decodeField(k, v string) (status bool) {
	switch k {
	case "status":
		r.Status = proto.TaskStatus(v)
		return true
	case "statusMessage":
		r.StatusMessage = v
	case "createdAt":
		r.CreatedAt = parseMs(v)
	case "lastUpdatedAt":
		r.LastUpdatedAt = parseMs(v)
	case "owner":
		r.Principal = v
	case "tool":
		r.Tool = v
	case "cancel":
		r.CancelRequested = v == "1"
	case "heartbeat":
		r.Heartbeat = parseMs(v)
	case "ttlMs":
		if v != "" {
			ttl, _ := strconv.ParseInt(v, 10, 64)
			r.TTLMs = &ttl
		}
	case "pollIntervalMs":
		r.PollIntervalMs = parseInt(v)
	case "attempt":
		r.Attempt = parseInt(v)
	case "running":
		r.Running = parseInt(v)
	case "arguments":
		if v != "" {
			r.Arguments = json.RawMessage(v)
		}
	case "argsRef":
		r.ArgumentsRef = v
	case "result":
		if v != "" {
			r.Result = json.RawMessage(v)
		}
	case "receipt":
		if v != "" {
			r.Receipt = json.RawMessage(v)
		}
	case "caps":
		if v != "" {
			r.Capabilities = json.RawMessage(v)
		}
	case "checkpoint":
		if v != "" {
			r.Checkpoint = json.RawMessage(v)
		}
	case "resumes":
		r.Resumes = parseInt(v)
	case "lost":
		r.Lost = parseInt(v)
	case "version":
		r.Version = parseInt(v)
	case "tl":
		r.tl = v
	case "startedAt":
		r.StartedAt = parseMs(v)
	case "cost":
		r.Cost = parseCost(v)
	case "error":
		var e proto.Error
		if v != "" && json.Unmarshal([]byte(v), &e) == nil {
			r.Error = &e
		}
	default:
		if key, ok := strings.CutPrefix(k, "req:"); ok {
			if r.InputRequests == nil {
				r.InputRequests = map[string]json.RawMessage{}
			}
			r.InputRequests[key] = json.RawMessage(v)
		} else if key, ok := strings.CutPrefix(k, "ans:"); ok {
			if r.Answers == nil {
				r.Answers = map[string]json.RawMessage{}
			}
			r.Answers[key] = json.RawMessage(v)
		}
	}
	return false
}

// decoded completes a record once every field is read (ok: the status was
// among them, else there is no record): what an absent field means, and
// what reads two fields (the result with its receipt).
func (r *Record) decoded(ok bool) (*Record, bool) {
	if !ok {
		return nil, false
	}
	if r.LastUpdatedAt.IsZero() { // not written until the first change
		r.LastUpdatedAt = r.CreatedAt
	}
	if r.Capabilities == nil {
		r.Capabilities = json.RawMessage("{}") // not written when empty
	}
	if r.Result != nil && r.Receipt != nil {
		r.Result = withReceipt(r.Result, r.Receipt)
	}
	return r, true
}

// formatTime renders a record time as the ISO 8601 text of the wire.
func formatTime(t time.Time) string { return t.UTC().Format(proto.TimeLayout) }

// Task is the record's wire Task.
func (r *Record) Task() proto.Task {
	t := proto.Task{
		TaskID:        r.Ref.ID,
		Status:        r.Status,
		StatusMessage: r.StatusMessage,
		CreatedAt:     formatTime(r.CreatedAt),
		TTLMs:         r.TTLMs,
	}
	t.LastUpdatedAt = t.CreatedAt // a new record's, formatted once
	if !r.LastUpdatedAt.Equal(r.CreatedAt) {
		t.LastUpdatedAt = formatTime(r.LastUpdatedAt)
	}
	if p := r.pollInterval(); p > 0 {
		t.PollIntervalMs = &p
	}
	return t
}

// pollInterval is the pollIntervalMs suggested now: the tool's own
// interval in every status, input_required included. A task waiting for
// input is polled by a client that already holds its inputRequests (the
// poll that saw input_required carried them), so a slower interval there
// saves nothing while the person thinks, and only delays the one poll that
// matters: the one after tasks/update, which real clients (the TypeScript
// client, the Inspector) make a whole interval later. The step after an
// answer is then seen at the tool's pace, like every other step.
func (r *Record) pollInterval() int64 { return r.PollIntervalMs }

// Detailed is the record's wire DetailedTask: the variant of its status.
func (r *Record) Detailed() proto.DetailedTask {
	d := proto.DetailedTask{Task: r.Task()}
	switch r.Status {
	case proto.StatusCompleted:
		d.Result = r.Result
	case proto.StatusInputRequired:
		d.InputRequests = r.InputRequests
		if d.InputRequests == nil {
			d.InputRequests = map[string]json.RawMessage{}
		}
	case proto.StatusFailed:
		d.Error = r.Error
		if d.Error == nil {
			d.Error = &proto.Error{Code: proto.CodeInternalError, Message: "Task failed"}
		}
	}
	return d
}
