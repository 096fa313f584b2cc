package proto

import "encoding/json"

// LoggingLevel is a syslog severity name.
type LoggingLevel string

// Logging levels, least severe first.
var loggingLevels = []LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// Severity is the level's rank (debug 0 … emergency 7), or -1 when unknown.
func (l LoggingLevel) Severity() int {
	for i, v := range loggingLevels {
		if v == l {
			return i
		}
	}
	return -1
}

// ProgressParams are the params of notifications/progress.
type ProgressParams struct {
	// ProgressToken is the token the request carried.
	ProgressToken json.RawMessage `json:"progressToken,omitempty"`
	// Progress increases with each notification.
	Progress float64 `json:"progress"`
	// Total is the total, when known.
	Total *float64 `json:"total,omitempty"`
	// Message describes the progress.
	Message string `json:"message,omitempty"`
}

// LoggingMessageParams are the params of notifications/message.
type LoggingMessageParams struct {
	// Level is the severity.
	Level LoggingLevel `json:"level"`
	// Logger names the source.
	Logger string `json:"logger,omitempty"`
	// Data is the message.
	Data any `json:"data"`
}

// Input request methods (InputRequests values name one of these).
const (
	MethodElicit        = "elicitation/create"
	MethodCreateMessage = "sampling/createMessage"
	MethodListRoots     = "roots/list"
)

// InputRequest is one server-to-client request embedded in a result:
// {method, params}, with no jsonrpc or id.
type InputRequest struct {
	// Method is elicitation/create, sampling/createMessage or roots/list.
	Method string `json:"method"`
	// Params are the request's params.
	Params any `json:"params,omitempty"`
}

// InputRequiredResult asks the client for input before the request can be
// answered (MRTR); the retry carries inputResponses and requestState.
type InputRequiredResult struct {
	ResultBase
	// InputRequests maps server-chosen keys to requests.
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	// RequestState is opaque state the retry must echo.
	RequestState string `json:"requestState,omitempty"`
}
