package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpq/mcpq/taskstate"
)

// The one contract of a task's job: its type, its payload, its id and the
// options every enqueue uses. asynq only delivers: the task record in
// Redis is the source of truth.

// Type is the asynq task type of a task's job.
const Type = "mcpq:run"

// Job is one run of a task: what a queue holds and delivers.
type Job struct {
	// Ref names the task.
	Ref taskstate.Ref
	// Tool is the catalog key of the task's tool (catalog.Entry.Key), so
	// a worker that does not serve it hands the job back without reading
	// the record. Empty in a job enqueued before jobs carried it.
	Tool string
	// Seq numbers the task's jobs (taskstate.Record.Resumes): 0 for its
	// first run, one more for each resume after input, takeover or
	// hand-back.
	Seq int64
	// Queue is the mcpq queue name (without the prefix: Keys.Queue adds it).
	Queue string
	// Done, on a delivery (Serve), marks the job done in asynq in the round
	// trip of the task's outcome (taskstate.Outcome.Beside; done.go); nil
	// on a Redis Cluster.
	Done taskstate.Job
}

// Payload is the asynq payload of j's job: the JSON of the task's Ref and
// tool ({"o":owner,"id":id,"t":tool}; no "t" without a tool), and the W3C
// traceparent of the request that made the job ("tp") when there is one.
func Payload(j Job) []byte { return payload(j.Ref, j.Tool, "") }

func payload(ref taskstate.Ref, tool, traceparent string) []byte {
	if plain([]byte(ref.Owner)) && plain([]byte(ref.ID)) && plain([]byte(tool)) {
		// What json.Marshal writes for names that need no escaping, in one
		// allocation: this runs on every enqueue.
		b := make([]byte, 0, len(`{"o":"","id":"","t":"","tp":""}`)+len(ref.Owner)+len(ref.ID)+len(tool)+len(traceparent))
		b = append(append(append(append(b, `{"o":"`...), ref.Owner...), `","id":"`...), ref.ID...)
		if tool != "" {
			b = append(append(b, `","t":"`...), tool...)
		}
		if traceparent != "" {
			b = append(append(b, `","tp":"`...), traceparent...)
		}
		return append(b, `"}`...)
	}
	b, _ := json.Marshal(message{Ref: ref, Tool: tool, TP: traceparent})
	return b
}

// message is a payload read as JSON.
type message struct {
	taskstate.Ref
	// Tool is the task's catalog key.
	Tool string `json:"t,omitempty"`
	// TP is the W3C traceparent of the request that made the job.
	TP string `json:"tp,omitempty"`
}

// Decode reads the task and tool of a payload Payload or an enqueue made.
func Decode(b []byte) (ref taskstate.Ref, tool string, err error) {
	m, err := decode(b)
	return m.Ref, m.Tool, err
}

func decode(b []byte) (message, error) {
	// Payload writes {"o":"<owner tag>","id":"<id>"}, maybe with
	// ,"t":"<tool>" and then ,"tp":"<traceparent>", none needing escapes:
	// read that shape directly, in one string whose parts the fields share
	// (one allocation per delivery), anything else as JSON.
	const pre, mid, toolSep, tpSep, post = `{"o":"`, `","id":"`, `","t":"`, `","tp":"`, `"}`
	if len(b) >= len(pre)+len(post) && bytes.HasPrefix(b, []byte(pre)) && bytes.HasSuffix(b, []byte(post)) {
		s := string(b[len(pre) : len(b)-len(post)])
		if owner, body, ok := strings.Cut(s, mid); ok {
			id, tool, parent := body, "", ""
			if i, t, ok := strings.Cut(body, toolSep); ok {
				id, tool = i, t
				tool, parent, _ = strings.Cut(tool, tpSep)
			} else {
				id, parent, _ = strings.Cut(id, tpSep)
			}
			if plainString(owner) && plainString(id) && plainString(tool) && plainString(parent) {
				return message{Ref: taskstate.Ref{Owner: owner, ID: id}, Tool: tool, TP: parent}, nil
			}
		}
	}
	var m message
	err := json.Unmarshal(b, &m)
	return m, err
}

// plainString is plain for a string.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// traceContext reads and writes W3C traceparent values.
var traceContext = propagation.TraceContext{}

// traceparent is the W3C traceparent of ctx's span, or "" without one.
func traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c["traceparent"]
}

// Trace returns ctx carrying, as its remote parent span, the trace
// context of the request that enqueued the job (an enqueue puts the span
// of its ctx in the payload); ctx as is when the payload has none or an
// invalid one.
func Trace(ctx context.Context, payload []byte) context.Context {
	if !bytes.Contains(payload, []byte(`"tp"`)) {
		return ctx // the common case: no trace context, nothing to decode
	}
	m, err := decode(payload)
	if err != nil || m.TP == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": m.TP})
}

// plain reports whether b stands in a JSON string as is, exactly as
// json.Marshal writes it (which also escapes <, > and &).
func plain(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// ID is the asynq task id of a task's job number seq: the task id for
// its first run, plus "#" and the sequence number for each later job (a
// resume after input, a takeover from a lost worker, a hand-back:
// Record.Resumes). Enqueueing the same job twice is then a harmless
// conflict, and a late delivery of an earlier job claims nothing.
func ID(ref taskstate.Ref, seq int64) string {
	if seq == 0 {
		return ref.ID
	}
	return ref.ID + "#" + strconv.FormatInt(seq, 10)
}

// Seq reads the job sequence number from the asynq task id of one of
// ref's jobs (ID); ok is false for an id ID does not make.
func Seq(ref taskstate.Ref, jobID string) (seq int64, ok bool) {
	if jobID == ref.ID {
		return 0, true
	}
	rest, found := strings.CutPrefix(jobID, ref.ID+"#")
	if !found {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil && n >= 0
}

// MaxRetry is how often asynq re-delivers a job whose delivery returned an
// error (Redis unreachable mid-run); retryDelay keeps those re-deliveries
// seconds apart, not asynq's default minutes. A job asynq archives after
// them is found by the worker's recovery of stranded tasks (Client.Revive).
const MaxRetry = 3

// retryDelay is the asynq RetryDelayFunc of workers: 1 s, 2 s, 4 s, at
// most 10 s.
func retryDelay(n int, _ error, _ *asynq.Task) time.Duration {
	return min(time.Second<<min(n, 4), 10*time.Second)
}

// Timeout is the asynq timeout of every job of a deployment whose tasks
// live at most maxTTL: only a backstop, the record's TTL and heartbeats
// are what stop a job.
func Timeout(maxTTL time.Duration) time.Duration { return maxTTL + time.Minute }

// enqueuer is what puts a task on a queue (*asynq.Client is one).
type enqueuer interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// enqueue puts j on asynq queue q (its queue's, or its shard's:
// Client.asynqQueue) to be delivered after delay (0: at once), with the trace context of ctx's span, if any, in the
// payload (Trace reads it back). A job already there (the same id) is a
// harmless conflict and answers nil.
func enqueue(ctx context.Context, enq enqueuer, q string, j Job, maxTTL, delay time.Duration) error {
	opts := []asynq.Option{asynq.TaskID(ID(j.Ref, j.Seq)), asynq.Queue(q), asynq.MaxRetry(MaxRetry),
		asynq.Timeout(Timeout(maxTTL))}
	if delay > 0 {
		opts = append(opts, asynq.ProcessIn(delay))
	}
	_, err := enq.EnqueueContext(ctx, asynq.NewTask(Type, payload(j.Ref, j.Tool, traceparent(ctx))), opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	return err
}
