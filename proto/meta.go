package proto

import "encoding/json"

// Protocol versions.
const (
	// ProtocolVersion is the version mcpq speaks.
	ProtocolVersion = "2026-07-28"
	// TasksExtension is the Tasks extension id.
	TasksExtension = "io.modelcontextprotocol/tasks"
)

// SupportedVersions returns the versions of the modern wire mcpq serves, a
// new slice on each call; the 2025-11-25 era (LegacyVersion) is served
// beside them (docs/eras.md).
func SupportedVersions() []string { return []string{ProtocolVersion} }

// Reserved _meta keys.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	MetaProgressToken      = "progressToken"
	// MetaTraceparent and MetaTracestate carry a request's W3C trace context.
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
)

// Method names.
const (
	MethodDiscover   = "server/discover"
	MethodToolsList  = "tools/list"
	MethodToolsCall  = "tools/call"
	MethodTasksGet   = "tasks/get"
	MethodTasksUpd   = "tasks/update"
	MethodTasksCncl  = "tasks/cancel"
	MethodTasksList  = "tasks/list"
	MethodTasksRes   = "tasks/result"
	MethodListen     = "subscriptions/listen"
	NotifyTasks      = "notifications/tasks"
	NotifyProgress   = "notifications/progress"
	NotifyMessage    = "notifications/message"
	NotifyCancelled  = "notifications/cancelled"
	NotifySubscribed = "notifications/subscriptions/acknowledged"
)

// RequestMeta is the decoded per-request _meta object. Required keys are
// checked by Validate; unknown keys are kept in Raw.
type RequestMeta struct {
	// ProtocolVersion is the required protocol version.
	ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
	// ClientCapabilities is the required capability object ({} = none).
	ClientCapabilities *ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
	// ClientInfo is the optional, unverified client identity.
	ClientInfo *Implementation `json:"io.modelcontextprotocol/clientInfo,omitempty"`
	// LogLevel is the optional (deprecated) minimum log level.
	LogLevel string `json:"io.modelcontextprotocol/logLevel,omitempty"`
	// ProgressToken asks for notifications/progress on this request.
	ProgressToken json.RawMessage `json:"progressToken,omitempty"`
	// Traceparent is the optional W3C trace context of the request
	// (traceparent header syntax); it takes precedence over the HTTP header.
	Traceparent string `json:"traceparent,omitempty"`
	// Tracestate is the optional W3C tracestate going with Traceparent.
	Tracestate string `json:"tracestate,omitempty"`
	// IdempotencyKey is mcpq's optional idempotency key of a tools/call
	// (MetaIdempotencyKey).
	IdempotencyKey string `json:"io.mcpq/idempotencyKey,omitempty"`
}

// RequestParams is the part every request's params share.
type RequestParams struct {
	// Meta is the required per-request _meta.
	Meta *RequestMeta `json:"_meta"`
}

// Implementation names a client or server.
type Implementation struct {
	// Name is the implementation's name.
	Name string `json:"name"`
	// Title is an optional display name.
	Title string `json:"title,omitempty"`
	// Version is the implementation's version.
	Version string `json:"version"`
}

// ClientCapabilities is what a client declares per request.
type ClientCapabilities struct {
	// Experimental holds non-standard capabilities.
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	// Roots (deprecated) is present when the client can list roots.
	Roots json.RawMessage `json:"roots,omitempty"`
	// Sampling (deprecated) is present when the client can sample.
	Sampling json.RawMessage `json:"sampling,omitempty"`
	// Elicitation is present when the client can elicit input.
	Elicitation json.RawMessage `json:"elicitation,omitempty"`
	// Extensions maps extension id to its settings object.
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// HasExtension reports whether the client declared the extension id.
func (c *ClientCapabilities) HasExtension(id string) bool {
	if c == nil {
		return false
	}
	_, ok := c.Extensions[id]
	return ok
}

// ServerCapabilities is what server/discover advertises.
type ServerCapabilities struct {
	// Tools is present when the server has tools.
	Tools *ListChangedCapability `json:"tools,omitempty"`
	// Prompts is present when the server has prompts.
	Prompts *ListChangedCapability `json:"prompts,omitempty"`
	// Resources is present when the server has resources.
	Resources *ResourcesCapability `json:"resources,omitempty"`
	// Completions is present when the server completes arguments.
	Completions *struct{} `json:"completions,omitempty"`
	// Logging (deprecated) is present when tools may log.
	Logging *struct{} `json:"logging,omitempty"`
	// Extensions maps extension id to its settings object.
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// ResourcesCapability says what resource notifications are sent.
type ResourcesCapability struct {
	// Subscribe is true when resource updates can be listened to.
	Subscribe bool `json:"subscribe,omitempty"`
	// ListChanged is true when the server notifies list changes.
	ListChanged bool `json:"listChanged,omitempty"`
}

// ListChangedCapability says whether list_changed notifications are sent.
type ListChangedCapability struct {
	// ListChanged is true when the server notifies list changes.
	ListChanged bool `json:"listChanged,omitempty"`
}

// Result types.
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
	ResultTask          = "task"
)

// ResultMeta is the _meta of a result.
type ResultMeta map[string]any

// ResultBase is the part every result shares.
type ResultBase struct {
	// Meta carries serverInfo and other result metadata.
	Meta ResultMeta `json:"_meta,omitempty"`
	// ResultType discriminates the result; required on every result.
	ResultType string `json:"resultType"`
}

// Ack is the empty acknowledgement result.
type Ack struct {
	ResultBase
}

// Cache scopes.
const (
	CachePublic  = "public"
	CachePrivate = "private"
)

// CacheHints is the CacheableResult part of list and discover results.
type CacheHints struct {
	// TTLMs is how long the client may cache the result (>= 0).
	TTLMs int64 `json:"ttlMs"`
	// CacheScope is "public" or "private".
	CacheScope string `json:"cacheScope"`
}

// DiscoverResult answers server/discover.
type DiscoverResult struct {
	ResultBase
	CacheHints
	// SupportedVersions lists every protocol version served.
	SupportedVersions []string `json:"supportedVersions"`
	// Capabilities is what the server offers.
	Capabilities ServerCapabilities `json:"capabilities"`
	// Instructions is optional guidance for the model.
	Instructions string `json:"instructions,omitempty"`
}

// Base gives access to the shared part of any result embedding ResultBase.
func (b *ResultBase) Base() *ResultBase { return b }
