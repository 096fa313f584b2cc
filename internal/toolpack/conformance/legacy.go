package conformance

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// The fixtures only the 2025-11-25 scenarios call (tools-call-sampling,
// tools-call-elicitation, elicitation-sep1034-defaults,
// elicitation-sep1330-enums). They ask with worker.Call.Input like every
// other input fixture; a 2025-11-25 client receives the question as a
// server-to-client request on its call's stream (frontend/internal/legacy/input.go).

// legacyTools are the 2025-11-25 input fixtures.
func legacyTools() []worker.Tool {
	tool := func(name, desc, schema string, h worker.Handler) worker.Tool {
		return worker.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(schema),
			Policy: worker.PolicySync, Handler: h}
	}
	return []worker.Tool{
		tool("test_sampling", "Asks the client's LLM for a completion of `prompt`, then quotes it.",
			`{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}`, legacySampling),
		tool("test_elicitation", "Asks the user for a username and an email with `message`, then echoes the answer.",
			`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`, legacyElicitation),
		tool("test_elicitation_sep1034_defaults", "Elicits a form whose every primitive field has a default (SEP-1034).",
			`{"type":"object"}`, formFixture(defaultsSchema)),
		tool("test_elicitation_sep1330_enums", "Elicits a form with the five enum variants of SEP-1330.",
			`{"type":"object"}`, formFixture(enumsSchema)),
	}
}

// Form schemas of the 2025-11-25 elicitation fixtures.
const (
	userSchema = `{"type":"object","properties":{"username":{"type":"string","description":"User's response"},` +
		`"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`
	defaultsSchema = `{"type":"object","properties":{` +
		`"name":{"type":"string","default":"John Doe"},` +
		`"age":{"type":"integer","default":30},` +
		`"score":{"type":"number","default":95.5},` +
		`"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},` +
		`"verified":{"type":"boolean","default":true}}}`
	enumsSchema = `{"type":"object","properties":{` +
		`"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},` +
		`"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},` +
		`"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},` +
		`"untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},` +
		`"titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`
)

func legacySampling(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	var a struct {
		Prompt string `json:"prompt"`
	}
	_ = json.Unmarshal(c.Arguments, &a)
	answers, err := ask(ctx, c, map[string]proto.InputRequest{"completion": sample(a.Prompt, 100)})
	if err != nil {
		return nil, err
	}
	text, err := decodeSampling(answers, "completion")
	if err != nil {
		return nil, err
	}
	return worker.TextResult("LLM response: " + text), nil
}

func legacyElicitation(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	var a struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(c.Arguments, &a)
	answers, err := ask(ctx, c, map[string]proto.InputRequest{"user": elicit(a.Message, userSchema)})
	if err != nil {
		return nil, err
	}
	ans, err := decodeElicit(answers, "user")
	if err != nil {
		return nil, err
	}
	content, _ := json.Marshal(ans.Content)
	return worker.TextResult(fmt.Sprintf("User response: action=%s, content=%s", ans.Action, content)), nil
}

// formFixture elicits a form of schema and reports the answer.
func formFixture(schema string) worker.Handler {
	return func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
		answers, err := ask(ctx, c, map[string]proto.InputRequest{"form": elicit("Please review and update the form fields", schema)})
		if err != nil {
			return nil, err
		}
		ans, err := decodeElicit(answers, "form")
		if err != nil {
			return nil, err
		}
		content, _ := json.Marshal(ans.Content)
		return worker.TextResult(fmt.Sprintf("Elicitation completed: action=%s, content=%s", ans.Action, content)), nil
	}
}
