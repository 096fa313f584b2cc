package client

import (
	"errors"
	"fmt"

	"github.com/mcpq/mcpq/proto"
)

// Code is a JSON-RPC error code as an error value, so callers test an
// answer with errors.Is(err, client.CodeInvalidParams) and friends.
type Code int

// Error codes of the protocol (docs: proto/jsonrpc.go).
const (
	CodeParseError                      Code = proto.CodeParseError
	CodeInvalidRequest                  Code = proto.CodeInvalidRequest
	CodeMethodNotFound                  Code = proto.CodeMethodNotFound
	CodeInvalidParams                   Code = proto.CodeInvalidParams
	CodeInternalError                   Code = proto.CodeInternalError
	CodeHeaderMismatch                  Code = proto.CodeHeaderMismatch
	CodeMissingRequiredClientCapability Code = proto.CodeMissingRequiredClientCapability
	CodeUnsupportedProtocolVersion      Code = proto.CodeUnsupportedProtocolVersion
	// CodeResourceNotFound is the retired -32002, still accepted from older
	// servers (it means what -32602 means for an unknown resource).
	CodeResourceNotFound Code = -32002
)

func (c Code) Error() string {
	switch c {
	case CodeParseError:
		return "parse error"
	case CodeInvalidRequest:
		return "invalid request"
	case CodeMethodNotFound:
		return "method not found"
	case CodeInvalidParams:
		return "invalid params"
	case CodeInternalError:
		return "internal error"
	case CodeHeaderMismatch:
		return "header mismatch"
	case CodeMissingRequiredClientCapability:
		return "missing required client capability"
	case CodeUnsupportedProtocolVersion:
		return "unsupported protocol version"
	case CodeResourceNotFound:
		return "resource not found"
	}
	return fmt.Sprintf("JSON-RPC error %d", int(c))
}

// RPCError is a JSON-RPC error answer, with the HTTP status it came with
// (0 for the error of a failed task). errors.Is(err, Code(n)) matches its code.
type RPCError struct {
	// RPC is the JSON-RPC error object.
	RPC *proto.Error
	// HTTPStatus is the response's status code.
	HTTPStatus int
}

func (e *RPCError) Error() string {
	if e.HTTPStatus == 0 {
		return e.RPC.Error()
	}
	return fmt.Sprintf("%v (HTTP %d)", e.RPC, e.HTTPStatus)
}

// Unwrap returns the JSON-RPC error.
func (e *RPCError) Unwrap() error { return e.RPC }

// Is reports whether target is the Code of this error.
func (e *RPCError) Is(target error) bool {
	c, ok := target.(Code)
	return ok && e.RPC != nil && int(c) == e.RPC.Code
}

// Temporary reports whether retrying the same request may succeed: the
// server was unavailable (HTTP 502, 503, 504 or 429).
func (e *RPCError) Temporary() bool {
	switch e.HTTPStatus {
	case 429, 502, 503, 504:
		return true
	}
	return false
}

// HTTPError is an answer that carried no JSON-RPC message (a proxy's error
// page, a 401 from an authenticating front end).
type HTTPError struct {
	// Status is the HTTP status code.
	Status int
	// Body is the start of the response body.
	Body string
}

func (e *HTTPError) Error() string { return fmt.Sprintf("HTTP %d: %q", e.Status, e.Body) }

// Temporary reports whether retrying may succeed (HTTP 429, 502, 503, 504).
func (e *HTTPError) Temporary() bool {
	switch e.Status {
	case 429, 502, 503, 504:
		return true
	}
	return false
}

// Sentinel is an error of this package that is a constant.
type Sentinel string

func (s Sentinel) Error() string { return string(s) }

// Errors a Handle's Wait ends with besides the task's own JSON-RPC error.
const (
	// ErrCancelled: the task ended cancelled, so there is no result.
	ErrCancelled Sentinel = "task cancelled"
	// ErrTaskGone: the server no longer knows the task (expired, or never
	// existed for this principal); it answered -32602.
	ErrTaskGone Sentinel = "task not found on the server (expired or unknown)"
)

// temporary reports whether err is worth retrying: a transport failure or
// an unavailable server, never a definite JSON-RPC answer.
func temporary(err error) bool {
	var re *RPCError
	if errors.As(err, &re) {
		return re.Temporary()
	}
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Temporary()
	}
	var se Sentinel
	return !errors.As(err, &se)
}
