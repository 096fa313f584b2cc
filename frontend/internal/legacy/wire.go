package legacy

import (
	"encoding/json"

	"github.com/mcpq/mcpq/proto"
)

// The era's wire types: protocol revision 2025-11-25, which opens an HTTP
// session with an initialize handshake (Mcp-Session-Id) instead of sending
// version and capabilities on every request. Its version, initialize and
// initialize's params are proto's (proto.LegacyVersion,
// proto.MethodInitialize, proto.InitializeParams): the modern server reads
// them too.

// HeaderSessionID names a session (2025-11-25 Streamable HTTP).
const HeaderSessionID = "Mcp-Session-Id"

// Methods and notifications that exist only in this era.
const (
	MethodPing             = "ping"
	MethodSetLevel         = "logging/setLevel"
	MethodResSubscribe     = "resources/subscribe"
	MethodResUnsubscribe   = "resources/unsubscribe"
	NotifyInitialized      = "notifications/initialized"
	NotifyRootsListChanged = "notifications/roots/list_changed"
	NotifyTaskStatus       = "notifications/tasks/status"
)

// Capabilities is the ServerCapabilities of an initialize result:
// the 2025-11-25 shape, whose tasks capability is the revision's own
// (never the extension, which that revision does not know).
type Capabilities struct {
	// Tools is present when the server has tools.
	Tools *proto.ListChangedCapability `json:"tools,omitempty"`
	// Prompts is present when the server has prompts.
	Prompts *proto.ListChangedCapability `json:"prompts,omitempty"`
	// Resources is present when the server has resources.
	Resources *proto.ResourcesCapability `json:"resources,omitempty"`
	// Completions is present when the server completes arguments.
	Completions *struct{} `json:"completions,omitempty"`
	// Logging is present when the client may set a log level.
	Logging *struct{} `json:"logging,omitempty"`
	// Tasks is the 2025-11-25 tasks capability: which requests may be
	// task-augmented and whether tasks/list and tasks/cancel are served.
	Tasks *TasksCapability `json:"tasks,omitempty"`
}

// TasksCapability is the server's 2025-11-25 tasks capability.
type TasksCapability struct {
	// List is present when tasks/list is served.
	List *struct{} `json:"list,omitempty"`
	// Cancel is present when tasks/cancel is served.
	Cancel *struct{} `json:"cancel,omitempty"`
	// Requests names the requests that may carry a task parameter.
	Requests *TaskRequests `json:"requests,omitempty"`
}

// TaskRequests lists the task-augmentable requests by area.
type TaskRequests struct {
	// Tools holds {"call": {}} when tools/call may be task-augmented.
	Tools map[string]struct{} `json:"tools,omitempty"`
}

// InitializeResult answers initialize.
type InitializeResult struct {
	// Meta carries result metadata.
	Meta proto.ResultMeta `json:"_meta,omitempty"`
	// ProtocolVersion is the revision the session speaks.
	ProtocolVersion string `json:"protocolVersion"`
	// Capabilities is what the server offers for the session.
	Capabilities Capabilities `json:"capabilities"`
	// ServerInfo names the server.
	ServerInfo proto.Implementation `json:"serverInfo"`
	// Instructions is optional guidance for the model.
	Instructions string `json:"instructions,omitempty"`
}

// ClientCapabilities is the part of a client's initialize
// capabilities mcpq reads: the input kinds it can answer and its tasks
// capability. The rest is kept in the session as sent.
type ClientCapabilities struct {
	// Roots is present when the client can list roots.
	Roots json.RawMessage `json:"roots,omitempty"`
	// Sampling is present when the client can sample.
	Sampling json.RawMessage `json:"sampling,omitempty"`
	// Elicitation is present when the client can elicit input.
	Elicitation json.RawMessage `json:"elicitation,omitempty"`
	// Tasks is present when the client speaks the 2025-11-25 tasks utility.
	Tasks json.RawMessage `json:"tasks,omitempty"`
}

// ServerRequest is a JSON-RPC request the server sends a client on
// a stream (elicitation/create, sampling/createMessage, roots/list).
type ServerRequest struct {
	// JSONRPC is always "2.0".
	JSONRPC string `json:"jsonrpc"`
	// ID names the request; the client's response echoes it.
	ID string `json:"id"`
	// Method is the request's method.
	Method string `json:"method"`
	// Params are the request's params.
	Params json.RawMessage `json:"params,omitempty"`
}

// SetLevelParams are the params of logging/setLevel.
type SetLevelParams struct {
	// Level is the lowest level the client wants notifications/message for.
	Level proto.LoggingLevel `json:"level"`
}

// Task is a task as the 2025-11-25 tasks utility shows it: the same
// record as proto.Task, with that revision's field names.
type Task struct {
	// TaskID is the server-generated, unguessable id.
	TaskID string `json:"taskId"`
	// Status is the current status.
	Status proto.TaskStatus `json:"status"`
	// StatusMessage is human-readable progress.
	StatusMessage string `json:"statusMessage,omitempty"`
	// CreatedAt is the ISO 8601 creation time.
	CreatedAt string `json:"createdAt"`
	// LastUpdatedAt is the ISO 8601 time of the last change.
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTL is the lifetime from CreatedAt in ms; nil means unlimited (JSON null).
	TTL *int64 `json:"ttl"`
	// PollInterval is the suggested polling interval in ms.
	PollInterval *int64 `json:"pollInterval,omitempty"`
}

// TaskOf is t in the 2025-11-25 shape.
func TaskOf(t proto.Task) Task {
	return Task{TaskID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage, CreatedAt: t.CreatedAt,
		LastUpdatedAt: t.LastUpdatedAt, TTL: t.TTLMs, PollInterval: t.PollIntervalMs}
}

// CreateTaskResult answers a task-augmented 2025-11-25 request.
type CreateTaskResult struct {
	// Meta carries result metadata.
	Meta proto.ResultMeta `json:"_meta,omitempty"`
	// Task is the task created.
	Task Task `json:"task"`
}

// TaskResult answers 2025-11-25 tasks/get and tasks/cancel.
type TaskResult struct {
	// Meta carries result metadata.
	Meta proto.ResultMeta `json:"_meta,omitempty"`
	Task
}

// TaskList answers 2025-11-25 tasks/list.
type TaskList struct {
	// Meta carries result metadata.
	Meta proto.ResultMeta `json:"_meta,omitempty"`
	// Tasks is the page, newest first.
	Tasks []Task `json:"tasks"`
	// NextCursor continues the listing; empty on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// Tool is a tools/list entry with the 2025-11-25 execution field.
type Tool struct {
	proto.Tool
	// Execution says whether the tool may or must run as a task.
	Execution *ToolExecution `json:"execution,omitempty"`
}

// ToolExecution is a 2025-11-25 tool's execution field.
type ToolExecution struct {
	// TaskSupport is "forbidden", "optional" or "required".
	TaskSupport string `json:"taskSupport"`
}

// MetaRelatedTask names the task a 2025-11-25 message belongs to.
const MetaRelatedTask = "io.modelcontextprotocol/related-task"
