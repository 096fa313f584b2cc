package proto

import "encoding/json"

// Tool is one entry of tools/list.
type Tool struct {
	// Name is the unique tool name.
	Name string `json:"name"`
	// Title is an optional display name.
	Title string `json:"title,omitempty"`
	// Description tells the model what the tool does.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the arguments object.
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema is the optional JSON Schema of structuredContent.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are optional behaviour hints.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Icons are optional icons for clients to show.
	Icons json.RawMessage `json:"icons,omitempty"`
}

// ListToolsParams are the params of tools/list.
type ListToolsParams struct {
	RequestParams
	// Cursor continues a paginated listing.
	Cursor string `json:"cursor,omitempty"`
}

// ListToolsResult answers tools/list.
type ListToolsResult struct {
	ResultBase
	CacheHints
	// Tools is the page of tools.
	Tools []Tool `json:"tools"`
	// NextCursor is set when more pages follow.
	NextCursor string `json:"nextCursor,omitempty"`
}

// CallToolParams are the params of tools/call.
type CallToolParams struct {
	RequestParams
	// Name is the tool to call.
	Name string `json:"name"`
	// Arguments is the arguments object.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// InputResponses answer the inputRequests of an InputRequiredResult (MRTR retry).
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
	// RequestState echoes the InputRequiredResult's requestState (MRTR retry).
	RequestState *string `json:"requestState,omitempty"`
}

// Content is one content block of a tool result (text, image, audio,
// resource_link or resource).
type Content struct {
	// Type is "text", "image", "audio", "resource_link" or "resource".
	Type string `json:"type"`
	// Text is the text of a text block.
	Text string `json:"text,omitempty"`
	// Data is base64 data of an image or audio block.
	Data string `json:"data,omitempty"`
	// MimeType is the media type of an image or audio block.
	MimeType string `json:"mimeType,omitempty"`
	// Resource is the embedded resource of a resource block.
	Resource json.RawMessage `json:"resource,omitempty"`
	// URI, Name are set on a resource_link block.
	URI  string `json:"uri,omitempty"`
	Name string `json:"name,omitempty"`
	// Title is a resource_link's display name.
	Title string `json:"title,omitempty"`
	// Description says what a resource_link's resource is.
	Description string `json:"description,omitempty"`
	// Size is a resource_link's resource size in bytes, when known.
	Size *int64 `json:"size,omitempty"`
	// Annotations are optional audience/priority hints.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Icons are a resource_link's icons, as the server wrote them.
	Icons json.RawMessage `json:"icons,omitempty"`
	// Meta is the block's _meta (mcpq puts a stored payload's signed URL
	// there: MetaSignedURL, MetaSignedURLExpires).
	Meta map[string]any `json:"_meta,omitempty"`
}

// TextContent builds a text block.
func TextContent(s string) Content { return Content{Type: "text", Text: s} }

// CallToolResult is the result of a tool.
type CallToolResult struct {
	ResultBase
	// Content is the unstructured result.
	Content []Content `json:"content"`
	// StructuredContent is the optional structured result.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	// IsError marks a tool error (still a successful JSON-RPC result).
	IsError bool `json:"isError,omitempty"`
}

// Policy is a tool's execution policy: who decides whether a call becomes a
// task. It is mcpq's, not a field of the 2026-07-28 wire (no per-tool
// declaration there); tool authors set it through worker.Tool.
type Policy string

// Execution policies.
const (
	// PolicyAuto (the default, also for "") waits up to the tool's sync
	// budget for the result, then hands out a task.
	PolicyAuto Policy = "auto"
	// PolicySync never makes a task: the front end waits for the result.
	PolicySync Policy = "sync"
	// PolicyTask always makes a task; clients without the Tasks extension
	// get -32021.
	PolicyTask Policy = "task"
)
