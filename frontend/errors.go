package frontend

import (
	"context"
	"errors"
	"net/http"

	"github.com/mcpq/mcpq/internal/redisconn"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// statusError is a JSON-RPC error that the protocol pins to an HTTP status
// other than the one its code implies (e.g. -32602 for missing _meta is 400).
type statusError struct {
	rpc    *proto.Error
	status int
}

func withStatus(e *proto.Error, status int) error { return &statusError{rpc: e, status: status} }

func (e *statusError) Error() string { return e.rpc.Error() }
func (e *statusError) Unwrap() error { return e.rpc }

// errTaskNotFound is what an unknown, expired or foreign task id answers,
// always the same.
func errTaskNotFound() *proto.Error {
	return proto.NewError(proto.CodeInvalidParams, "Failed to retrieve task: Task not found")
}

// retryAfterUnavailable is the Retry-After (seconds) of a 503: a Redis
// restart or a Sentinel failover takes seconds, not minutes.
const retryAfterUnavailable = "2"

// errUnavailable is what a request answers when Redis cannot be reached.
// The code stays -32603 (Internal error): JSON-RPC 2.0 reserves
// -32000..-32099 for implementations but names none for "retry later", and
// the status-code table of the MCP transport this server implements pins no
// code to 503, so the retry signal is the HTTP status and its Retry-After,
// which load balancers and HTTP clients already act on (the same answer as
// auth.go's unavailable key store, see docs/security.md).
func errUnavailable() *proto.Error {
	return proto.NewError(proto.CodeInternalError, "Service unavailable: the task store cannot be reached; retry shortly")
}

// errAtCapacity is what a request answers when Redis refused its write at
// maxmemory: the same retry signal as errUnavailable (503, Retry-After),
// since records expire and ended tasks free their memory.
func errAtCapacity() *proto.Error {
	return proto.NewError(proto.CodeInternalError, "Service at capacity: the task store is full; retry later")
}

// toRPC is the one place errors become JSON-RPC errors and HTTP statuses.
// Whoever writes the answer calls setRetryAfter with the status.
func toRPC(err error) (*proto.Error, int) {
	var se *statusError
	if errors.As(err, &se) {
		return se.rpc, se.status
	}
	var pe *proto.Error
	var re *taskstate.ReplicaError
	switch {
	case errors.As(err, &pe):
	case errors.As(err, &re):
		// The write stands on the primary; only its durability is in doubt.
		pe = proto.NewError(proto.CodeInternalError, "Not replicated: the change was made, but only %d of %d Redis replicas "+
			"confirmed it within %s, so a Redis failover may lose it", re.Got, re.Want, re.Timeout)
		pe.Data = map[string]any{"replicasConfirmed": re.Got, "replicasWanted": re.Want}
	case errors.Is(err, taskstate.ErrNotFound), errors.Is(err, taskstate.ErrExpired):
		pe = errTaskNotFound()
	case errors.Is(err, taskstate.ErrLimit):
		return proto.NewError(proto.CodeInternalError, "Limit reached: too many live tasks for this principal; wait for some to end"),
			http.StatusTooManyRequests
	case errors.Is(err, taskstate.ErrArgsLimit):
		return proto.NewError(proto.CodeInternalError, "Limit reached: this principal's live tasks hold too many argument bytes; wait for some to end"),
			http.StatusTooManyRequests
	// After the sentinels: a refusal is never unavailability, and the
	// classification walks the error chain many times over.
	case redisconn.IsAtCapacity(err):
		return errAtCapacity(), http.StatusServiceUnavailable
	case redisconn.IsUnavailable(err):
		return errUnavailable(), http.StatusServiceUnavailable
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		pe = proto.NewError(proto.CodeInternalError, "Internal error: request cancelled or timed out")
	default:
		pe = proto.NewError(proto.CodeInternalError, "Internal error")
	}
	return pe, statusForCode(pe.Code)
}

// statusForCode is the HTTP status of a JSON-RPC error code (status-code
// table of the 2026-07-28 Streamable HTTP transport; codes the table does
// not name answer 200).
func statusForCode(code int) int {
	switch code {
	case proto.CodeParseError, proto.CodeInvalidRequest, proto.CodeHeaderMismatch,
		proto.CodeMissingRequiredClientCapability, proto.CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	case proto.CodeMethodNotFound:
		return http.StatusNotFound
	}
	return http.StatusOK
}

// setRetryAfter adds Retry-After to a 503 answer, so a client or a load
// balancer retries it (on this or another replica) instead of giving up.
func setRetryAfter(h http.Header, status int) {
	if status == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
		h.Set("Retry-After", retryAfterUnavailable)
	}
}
