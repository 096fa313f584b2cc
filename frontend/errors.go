package frontend

import (
	"context"
	"errors"
	"net/http"

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

// toRPC is the one place errors become JSON-RPC errors and HTTP statuses.
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
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		pe = proto.NewError(proto.CodeInternalError, "Internal error: request cancelled or timed out")
	default:
		pe = proto.NewError(proto.CodeInternalError, "Internal error")
	}
	return pe, statusForCode(pe.Code)
}

// statusForCode is the HTTP status of a JSON-RPC error code (status-code
// table of docs/protocol.md A6; codes the table does not name answer 200).
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
