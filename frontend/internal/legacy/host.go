package legacy

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/events"
)

// Host is the modern front end the era runs on: what it asks of package
// frontend, which implements it (frontend/era.go, the era's one hook). A
// request of the era is served by the same modern methods as its twin,
// with a _meta rebuilt from its session; Host runs them.
type Host interface {
	// Admit authenticates r and charges its principal's rate limit, as
	// for any POST /mcp (401, 429 or 503 errors).
	Admit(w http.ResponseWriter, r *http.Request) (principal string, err error)
	// WriteError answers a request that reached no method with err.
	WriteError(w http.ResponseWriter, err error)
	// WithStatus is e answered with HTTP status rather than the one its
	// code implies.
	WithStatus(e *proto.Error, status int) error
	// Pinned reports whether the front end pinned err's HTTP status
	// (WithStatus: a missing session, a 401, 413, ...) rather than derived
	// it from err's JSON-RPC code.
	Pinned(err error) bool
	// NotAllowed is the modern transport's answer to GET and DELETE /mcp
	// (405).
	NotAllowed(w http.ResponseWriter, r *http.Request)
	// Open starts a request of r that no POST body carries (a GET
	// stream, a resumed one) for principal: its answer goes on w.
	Open(w http.ResponseWriter, r *http.Request, principal string) Request
	// Catalog lists the catalog's entries; Entry finds one by name (nil:
	// no such entry).
	Catalog(ctx context.Context) ([]catalog.Entry, error)
	Entry(ctx context.Context, name string) (*catalog.Entry, error)
	// Serve runs req's method as the modern era serves it, with the _meta
	// req uses, and stamps the result with the server's _meta.
	Serve(ctx context.Context, req Request) (any, error)
	// Result is the answer of a request whose task ended (rec): its
	// result, or its error. With relatedTask, a result also names the
	// task in its _meta (io.modelcontextprotocol/related-task) and carries
	// the server's _meta.
	Result(rec *taskstate.Record, relatedTask string) (any, error)
	// Answer writes answers into the task's record and resumes the task
	// when nothing is pending any more, as tasks/update does.
	Answer(ctx context.Context, ref taskstate.Ref, answers map[string]json.RawMessage) error
	// AcquireStream counts one more open stream of principal against the
	// per-principal cap (429 past it); release gives it back.
	AcquireStream(principal string) (release func(), err error)
	// Draining is closed when the server drains: open streams end.
	Draining() <-chan struct{}
}

// Request is one request in flight on the front end, as the era sees it
// (frontend/era.go implements it over the modern request).
type Request interface {
	// RPC is the JSON-RPC request (an empty one for a GET stream).
	RPC() *proto.Request
	// HTTP is the HTTP request.
	HTTP() *http.Request
	// Principal is who the request acts for.
	Principal() string
	// Attach makes c the request's era: the modern call path asks it what
	// it leaves to an era (Call's methods).
	Attach(c *Call)
	// Route decodes the request's params as the modern methods read them,
	// and returns the fields the era reads itself (-32602 when they do
	// not decode).
	Route() (Params, error)
	// Use sets the request's _meta (rebuilt from its session).
	Use(meta *proto.RequestMeta)
	// Rebind makes rpc the JSON-RPC request a resumed stream answers.
	Rebind(rpc *proto.Request)
	// Header is the HTTP answer's header.
	Header() http.Header
	// AcceptsSSE reports whether the client accepts text/event-stream.
	AcceptsSSE() bool
	// Notify sends msg on the request's SSE stream; false when the client
	// takes no stream.
	Notify(msg any) bool
	// KeepAlive writes an SSE comment, opening the stream if it is not.
	KeepAlive()
	// Log makes the request's stream resumable: each event is logged to l
	// first and carries the id l gives it.
	Log(l *EventLog)
	// Resend writes an event logged before with its id (a replay).
	Resend(id string, data []byte)
	// Finish writes the final response to the JSON-RPC request id: res, or
	// err when it is not nil.
	Finish(id json.RawMessage, res any, err error)
	// TaskNow makes a tools/call answer a task at once, with a lifetime
	// of at most ttl ms (nil: the tool's).
	TaskNow(ttl *int64)
	// Observe marks a request that only watches a task: leaving it, or
	// its wait ending, does not cancel the task.
	Observe()
	// Shown records that the request showed its task at version: an event
	// for it or older is stale.
	Shown(version int64)
	// NextProgress is the value of the next notifications/progress of the
	// request: the last one sent plus one, or 0 before any.
	NextProgress() float64
	// RestoreProgress records p as the last progress sent (a resumed
	// stream's, read from its log).
	RestoreProgress(p float64)
	// Await waits up to d for the task at ref to end or ask for input,
	// woken by sub, relaying the task's notifications meanwhile; with
	// resultOnly an event carrying the result ends it without a read.
	Await(ctx context.Context, sub *events.Subscription, ref taskstate.Ref, d time.Duration,
		resultOnly bool) (*taskstate.Record, error)
	// WatchAuth watches the request's credentials while ctx is open: the
	// context it returns ends once they are revoked; stop ends the watch.
	WatchAuth(ctx context.Context) (watched context.Context, stop func())
}

// Params are the fields of a request's params the era reads, decoded by
// the front end in the same pass as the modern methods' (Request.Route).
type Params struct {
	// ProgressToken is params._meta.progressToken (nil: none).
	ProgressToken json.RawMessage
	// TaskID is params.taskId when it is a string ("" otherwise).
	TaskID string
}
