package conformance

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// Input requests the fixtures ask (MRTR and tasks/update alike) and the
// decoding of their answers. A handler asks with ask: it runs again from
// the start once every key is answered, so it asks the same keys again and
// gets the answers; a later round uses new keys.

// elicitParams are the params of a form-mode elicitation/create request.
type elicitParams struct {
	// Message is shown to the user.
	Message string `json:"message"`
	// RequestedSchema is the flat object schema of the form.
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// elicit is an elicitation/create request for a form with schema.
func elicit(message, schema string) proto.InputRequest {
	return proto.InputRequest{Method: proto.MethodElicit,
		Params: elicitParams{Message: message, RequestedSchema: json.RawMessage(schema)}}
}

// Form schemas the fixtures elicit.
const (
	nameSchema    = `{"type":"object","properties":{"name":{"type":"string","description":"Your name"}},"required":["name"]}`
	confirmSchema = `{"type":"object","properties":{"confirm":{"type":"boolean","description":"Confirm the operation"}},"required":["confirm"]}`
	okSchema      = `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`
	colorSchema   = `{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`
	contextSchema = `{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`
)

// samplingMessage is one message of a sampling request.
type samplingMessage struct {
	Role    string        `json:"role"`
	Content proto.Content `json:"content"`
}

// samplingParams are the params of a sampling/createMessage request.
type samplingParams struct {
	Messages  []samplingMessage `json:"messages"`
	MaxTokens int               `json:"maxTokens"`
}

// sample is a sampling/createMessage request for one user prompt.
func sample(prompt string, maxTokens int) proto.InputRequest {
	return proto.InputRequest{Method: proto.MethodCreateMessage, Params: samplingParams{
		Messages:  []samplingMessage{{Role: "user", Content: proto.TextContent(prompt)}},
		MaxTokens: maxTokens,
	}}
}

// listRoots is a roots/list request.
func listRoots() proto.InputRequest {
	return proto.InputRequest{Method: proto.MethodListRoots, Params: map[string]any{}}
}

// ask asks for reqs (Call.Input answers -32021 naming the capabilities the
// creating request did not declare). Its error, including the one that
// parks the task, is returned by the handler as is.
func ask(ctx context.Context, c *worker.Call, reqs map[string]proto.InputRequest) (map[string]json.RawMessage, error) {
	return c.Input(ctx, reqs)
}

// badAnswer is the -32602 error for an answer that does not decode.
func badAnswer(key, want string) error {
	return proto.NewError(proto.CodeInvalidParams, "Invalid input response %q: expected %s", key, want)
}

// elicitAnswer is a decoded ElicitResult.
type elicitAnswer struct {
	// Action is accept, decline or cancel.
	Action string `json:"action"`
	// Content holds the form's values (accept only).
	Content map[string]json.RawMessage `json:"content"`
}

// accepted reports whether the user accepted the form.
func (a elicitAnswer) accepted() bool { return a.Action == "accept" }

// str is the form's string value of field ("" when absent or not a string).
func (a elicitAnswer) str(field string) string {
	var s string
	_ = json.Unmarshal(a.Content[field], &s)
	return s
}

// boolean is the form's boolean value of field (false when absent).
func (a elicitAnswer) boolean(field string) bool {
	var b bool
	_ = json.Unmarshal(a.Content[field], &b)
	return b
}

// decodeElicit reads the answer to the elicitation asked under key.
func decodeElicit(answers map[string]json.RawMessage, key string) (elicitAnswer, error) {
	var a elicitAnswer
	if err := json.Unmarshal(answers[key], &a); err != nil {
		return a, badAnswer(key, "an ElicitResult object")
	}
	switch a.Action {
	case "accept", "decline", "cancel":
		return a, nil
	}
	return a, badAnswer(key, `an ElicitResult with action "accept", "decline" or "cancel"`)
}

// decodeSampling reads the text of the CreateMessageResult asked under key
// (its first text block; a placeholder when it has none).
func decodeSampling(answers map[string]json.RawMessage, key string) (string, error) {
	var r struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(answers[key], &r); err != nil || len(r.Content) == 0 {
		return "", badAnswer(key, "a CreateMessageResult object")
	}
	var blocks []proto.Content
	if strings.HasPrefix(strings.TrimSpace(string(r.Content)), "[") {
		if err := json.Unmarshal(r.Content, &blocks); err != nil {
			return "", badAnswer(key, "a CreateMessageResult with content blocks")
		}
	} else {
		var b proto.Content
		if err := json.Unmarshal(r.Content, &b); err != nil {
			return "", badAnswer(key, "a CreateMessageResult with a content block")
		}
		blocks = []proto.Content{b}
	}
	for _, b := range blocks {
		if b.Type == "text" {
			return b.Text, nil
		}
	}
	return "(no text in the response)", nil
}

// root is one entry of a ListRootsResult.
type root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// decodeRoots reads the ListRootsResult asked under key.
func decodeRoots(answers map[string]json.RawMessage, key string) ([]root, error) {
	var r struct {
		Roots *[]root `json:"roots"`
	}
	if err := json.Unmarshal(answers[key], &r); err != nil || r.Roots == nil {
		return nil, badAnswer(key, "a ListRootsResult object")
	}
	return *r.Roots, nil
}
