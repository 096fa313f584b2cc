package proto

import (
	"encoding/json"
	"fmt"
	"strings"
)

// JSONRPCVersion is the only "jsonrpc" value accepted.
const JSONRPCVersion = "2.0"

// Request is one JSON-RPC 2.0 request or notification as read from the wire.
type Request struct {
	// JSONRPC must be "2.0".
	JSONRPC string `json:"jsonrpc"`
	// ID is the request id (string or number); absent for a notification.
	ID json.RawMessage `json:"id,omitempty"`
	// Method is the method name.
	Method string `json:"method"`
	// Params is the raw params object, decoded by the method's handler.
	Params json.RawMessage `json:"params,omitempty"`
}

// IsNotification reports whether the request carries no id.
func (r *Request) IsNotification() bool { return len(r.ID) == 0 }

// Response is one JSON-RPC 2.0 response: exactly one of Result and Error is set.
type Response struct {
	// JSONRPC is always "2.0".
	JSONRPC string `json:"jsonrpc"`
	// ID echoes the request id; JSON null when it could not be read.
	ID json.RawMessage `json:"id"`
	// Result is the method's result.
	Result any `json:"result,omitempty"`
	// Error is the JSON-RPC error.
	Error *Error `json:"error,omitempty"`
}

// Notification is a JSON-RPC 2.0 notification sent by the server.
type Notification struct {
	// JSONRPC is always "2.0".
	JSONRPC string `json:"jsonrpc"`
	// Method is the notification method.
	Method string `json:"method"`
	// Params is the notification params.
	Params any `json:"params,omitempty"`
}

// Error is a JSON-RPC error object. It implements error so handlers can
// return it directly.
type Error struct {
	// Code is the JSON-RPC error code.
	Code int `json:"code"`
	// Message is a short human-readable description.
	Message string `json:"message"`
	// Data is optional structured detail.
	Data any `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// JSON-RPC and MCP error codes emitted by mcpq.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeHeaderMismatch: an HTTP header disagrees with the body (HTTP 400).
	CodeHeaderMismatch = -32020
	// CodeMissingRequiredClientCapability: the request needs a capability
	// the client did not declare (HTTP 400).
	CodeMissingRequiredClientCapability = -32021
	// CodeUnsupportedProtocolVersion: the requested protocol version is not served (HTTP 400).
	CodeUnsupportedProtocolVersion = -32022
)

// NewError builds an *Error.
func NewError(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// MissingCapabilityData is the data of a -32021 error.
type MissingCapabilityData struct {
	// RequiredCapabilities lists what the request needs, as a ClientCapabilities object.
	RequiredCapabilities ClientCapabilities `json:"requiredCapabilities"`
}

// UnsupportedVersionData is the data of a -32022 error.
type UnsupportedVersionData struct {
	// Supported lists the versions this server speaks.
	Supported []string `json:"supported"`
	// Requested is the version the client asked for.
	Requested string `json:"requested"`
}

// MissingCapability builds the -32021 error naming what is required.
func MissingCapability(message string, required ClientCapabilities) *Error {
	return &Error{Code: CodeMissingRequiredClientCapability, Message: message,
		Data: MissingCapabilityData{RequiredCapabilities: required}}
}

// MissingTasksExtension is the -32021 error for a request that can only be
// served as a task (or a tasks/* call) from a client that did not declare the extension.
func MissingTasksExtension() *Error {
	return MissingCapability("Missing required client capability",
		ClientCapabilities{Extensions: map[string]json.RawMessage{TasksExtension: json.RawMessage(`{}`)}})
}

// MissingInputCapabilities is the -32021 error for input requests (by
// method: elicitation/create, sampling/createMessage, roots/list) that caps
// did not declare it can answer, naming each missing capability once; nil
// when caps cover them all. A server never asks for input a client cannot
// give.
func MissingInputCapabilities(caps ClientCapabilities, methods []string) *Error {
	var missing ClientCapabilities
	var names []string
	empty := json.RawMessage(`{}`)
	for _, m := range methods {
		switch m {
		case MethodElicit:
			if caps.Elicitation == nil && missing.Elicitation == nil {
				missing.Elicitation, names = empty, append(names, "elicitation")
			}
		case MethodCreateMessage:
			if caps.Sampling == nil && missing.Sampling == nil {
				missing.Sampling, names = empty, append(names, "sampling")
			}
		case MethodListRoots:
			if caps.Roots == nil && missing.Roots == nil {
				missing.Roots, names = empty, append(names, "roots")
			}
		}
	}
	if names == nil {
		return nil
	}
	return MissingCapability("This call needs the "+strings.Join(names, " and ")+" client capability", missing)
}
