package proto

import "encoding/json"

// Prompt is one entry of prompts/list.
type Prompt struct {
	// Name is the unique prompt name.
	Name string `json:"name"`
	// Title is an optional display name.
	Title string `json:"title,omitempty"`
	// Description says what the prompt is for.
	Description string `json:"description,omitempty"`
	// Arguments lists the prompt's arguments.
	Arguments []PromptArgument `json:"arguments,omitempty"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	// Name is the argument name.
	Name string `json:"name"`
	// Description says what the argument is.
	Description string `json:"description,omitempty"`
	// Required marks an argument the prompt needs.
	Required bool `json:"required,omitempty"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	// Role is "user" or "assistant".
	Role string `json:"role"`
	// Content is the message content block.
	Content Content `json:"content"`
}

// GetPromptParams are the params of prompts/get.
type GetPromptParams struct {
	RequestParams
	// Name is the prompt.
	Name string `json:"name"`
	// Arguments are the argument values.
	Arguments map[string]string `json:"arguments,omitempty"`
}

// GetPromptResult answers prompts/get.
type GetPromptResult struct {
	ResultBase
	// Description describes the rendered prompt.
	Description string `json:"description,omitempty"`
	// Messages are the prompt's messages.
	Messages []PromptMessage `json:"messages"`
}

// ListPromptsResult answers prompts/list.
type ListPromptsResult struct {
	ResultBase
	CacheHints
	// Prompts is the page of prompts.
	Prompts []Prompt `json:"prompts"`
	// NextCursor is set when more pages follow.
	NextCursor string `json:"nextCursor,omitempty"`
}

// Resource is one entry of resources/list.
type Resource struct {
	// URI identifies the resource.
	URI string `json:"uri"`
	// Name is a short name.
	Name string `json:"name"`
	// Title is an optional display name.
	Title string `json:"title,omitempty"`
	// Description says what the resource is.
	Description string `json:"description,omitempty"`
	// MimeType is the resource's media type.
	MimeType string `json:"mimeType,omitempty"`
}

// ResourceTemplate is one entry of resources/templates/list.
type ResourceTemplate struct {
	// URITemplate is an RFC 6570 URI template.
	URITemplate string `json:"uriTemplate"`
	// Name is a short name.
	Name string `json:"name"`
	// Title is an optional display name.
	Title string `json:"title,omitempty"`
	// Description says what the resources are.
	Description string `json:"description,omitempty"`
	// MimeType is the resources' media type.
	MimeType string `json:"mimeType,omitempty"`
}

// ResourceContents is the content of a resource: text or base64 blob.
type ResourceContents struct {
	// URI identifies the resource.
	URI string `json:"uri"`
	// MimeType is the media type.
	MimeType string `json:"mimeType,omitempty"`
	// Text is the text content.
	Text *string `json:"text,omitempty"`
	// Blob is base64 binary content.
	Blob *string `json:"blob,omitempty"`
}

// ListResourcesResult answers resources/list.
type ListResourcesResult struct {
	ResultBase
	CacheHints
	// Resources is the page of resources.
	Resources []Resource `json:"resources"`
	// NextCursor is set when more pages follow.
	NextCursor string `json:"nextCursor,omitempty"`
}

// ListResourceTemplatesResult answers resources/templates/list.
type ListResourceTemplatesResult struct {
	ResultBase
	CacheHints
	// ResourceTemplates is the page of templates.
	ResourceTemplates []ResourceTemplate `json:"resourceTemplates"`
	// NextCursor is set when more pages follow.
	NextCursor string `json:"nextCursor,omitempty"`
}

// ReadResourceParams are the params of resources/read.
type ReadResourceParams struct {
	RequestParams
	// URI is the resource to read.
	URI string `json:"uri"`
}

// ReadResourceResult answers resources/read.
type ReadResourceResult struct {
	ResultBase
	CacheHints
	// Contents are the resource's contents.
	Contents []ResourceContents `json:"contents"`
}

// CompleteParams are the params of completion/complete.
type CompleteParams struct {
	RequestParams
	// Ref is {type: "ref/prompt", name} or {type: "ref/resource", uri}.
	Ref json.RawMessage `json:"ref"`
	// Argument is {name, value}: the argument being completed.
	Argument json.RawMessage `json:"argument"`
	// Context carries already-resolved arguments.
	Context json.RawMessage `json:"context,omitempty"`
}

// CompleteResult answers completion/complete.
type CompleteResult struct {
	ResultBase
	// Completion holds the suggestions.
	Completion Completion `json:"completion"`
}

// Completion is a list of suggested values.
type Completion struct {
	// Values are the suggestions (at most 100).
	Values []string `json:"values"`
	// Total is the number of matches, when known.
	Total int `json:"total,omitempty"`
	// HasMore says more matches exist.
	HasMore bool `json:"hasMore,omitempty"`
}

// Method names of prompts, resources and completions.
const (
	MethodPromptsList        = "prompts/list"
	MethodPromptsGet         = "prompts/get"
	MethodResourcesList      = "resources/list"
	MethodResourcesRead      = "resources/read"
	MethodResourcesTemplates = "resources/templates/list"
	MethodComplete           = "completion/complete"
	NotifyToolsListChanged   = "notifications/tools/list_changed"
	NotifyPromptsListChanged = "notifications/prompts/list_changed"
	NotifyResourcesChanged   = "notifications/resources/list_changed"
	NotifyResourceUpdated    = "notifications/resources/updated"
)
