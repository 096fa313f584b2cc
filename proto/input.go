package proto

import "encoding/json"

// ElicitAction is the user's answer to an elicitation.
type ElicitAction string

// Elicitation actions.
const (
	// ElicitAccept: the user submitted the form; Content holds its values.
	ElicitAccept ElicitAction = "accept"
	// ElicitDecline: the user explicitly declined.
	ElicitDecline ElicitAction = "decline"
	// ElicitCancel: the user dismissed the form without choosing.
	ElicitCancel ElicitAction = "cancel"
)

// ElicitParams are the params of a form-mode elicitation/create request.
type ElicitParams struct {
	// Message is shown to the user.
	Message string `json:"message"`
	// RequestedSchema is the flat object schema of the form.
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// ElicitResult answers elicitation/create.
type ElicitResult struct {
	// Action is accept, decline or cancel.
	Action ElicitAction `json:"action"`
	// Content holds the form's values (accept only).
	Content json.RawMessage `json:"content,omitempty"`
}

// SamplingMessage is one message of a sampling request or its answer.
type SamplingMessage struct {
	// Role is "user" or "assistant".
	Role string `json:"role"`
	// Content is the message's content block.
	Content Content `json:"content"`
}

// CreateMessageParams are the params of sampling/createMessage.
type CreateMessageParams struct {
	// Messages is the conversation to continue.
	Messages []SamplingMessage `json:"messages"`
	// SystemPrompt is an optional system prompt.
	SystemPrompt string `json:"systemPrompt,omitempty"`
	// MaxTokens bounds the answer's length.
	MaxTokens int `json:"maxTokens"`
}

// CreateMessageResult answers sampling/createMessage. Content is one block
// or an array of blocks on the wire; both decode into Content.
type CreateMessageResult struct {
	// Role is the answer's role (normally "assistant").
	Role string `json:"role"`
	// Content is the answer's content blocks.
	Content ContentBlocks `json:"content"`
	// Model names the model that answered.
	Model string `json:"model,omitempty"`
	// StopReason says why generation stopped.
	StopReason string `json:"stopReason,omitempty"`
}

// ContentBlocks is a list of content blocks that also decodes from a single
// block (a union on the wire).
type ContentBlocks []Content

// UnmarshalJSON accepts one block or an array of blocks.
func (c *ContentBlocks) UnmarshalJSON(b []byte) error {
	for _, ch := range b {
		switch ch {
		case ' ', '\t', '\n', '\r':
			continue
		case '[':
			return json.Unmarshal(b, (*[]Content)(c))
		}
		break
	}
	var one Content
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	*c = ContentBlocks{one}
	return nil
}

// Root is one entry of a ListRootsResult.
type Root struct {
	// URI is the root's file:// URI.
	URI string `json:"uri"`
	// Name is an optional display name.
	Name string `json:"name,omitempty"`
}

// ListRootsResult answers roots/list.
type ListRootsResult struct {
	// Roots are the client's roots.
	Roots []Root `json:"roots"`
}
