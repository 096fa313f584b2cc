package frontend

import (
	"context"
	"net/http"
	"time"

	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// The points where the modern server lets another protocol era in: the
// Server's eraServer, which claims the era's requests, and a claimed
// request's callHook, which the modern call path asks where it leaves a
// decision to the era. frontend/era.go plugs in the 2025-11-25 era
// (frontend/internal/legacy, docs/eras.md); a modern request has no hook,
// so it costs a nil check at each point.

// eraServer serves the requests of an era besides the modern one (nil: the
// server serves the modern era alone, Config.Eras).
type eraServer interface {
	// claims reports whether c, a POST request, is the era's.
	claims(c *call) bool
	// serve serves a request the era claimed.
	serve(c *call) (any, error)
	// response takes a POST body that answers the server (a JSON-RPC
	// response of the era's client); false when body is none of the era's.
	response(w http.ResponseWriter, r *http.Request, principal string, body []byte) bool
	// serveGet and serveDelete serve GET and DELETE /mcp.
	serveGet(w http.ResponseWriter, r *http.Request)
	serveDelete(w http.ResponseWriter, r *http.Request)
}

// callHook is the era of a request it claimed (call.hook): what the
// modern call path asks it.
type callHook interface {
	// Held is called once the task of a call exists and the call waits
	// for it (not for a task handed out at once).
	Held(ctx context.Context, ref taskstate.Ref)
	// State is called with each state of the awaited task that is new to
	// the request.
	State(ev events.Event)
	// AskInput answers a parked task's input requests instead of an
	// InputRequiredResult, holding the call until wait has passed since
	// start.
	AskInput(ctx context.Context, sub *events.Subscription, rec *taskstate.Record, start time.Time,
		wait time.Duration) (any, error)
	// Status is the HTTP status of the request's error (status: the one
	// toRPC gave it).
	Status(err error, status int) int
}

// eventLog makes a request's stream resumable (an era's, responder.log):
// each event is logged first and carries the id Append returns ("": none);
// with Prime the stream opens with an id-only event.
type eventLog interface {
	Append(b []byte, final bool) (id string)
	Prime() bool
}
