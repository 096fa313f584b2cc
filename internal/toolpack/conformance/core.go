package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// The core fixtures of the 2026-07-28 scored scenarios (tools-call-*,
// server-stateless, json-schema-2020-12, http-custom-header-server-validation).
// They always answer in the request (PolicySync).

// Names of the entries the list-change triggers (re)register.
const (
	probeTool   = "_list_changed_probe"
	probePrompt = "_list_changed_probe_prompt"
)

// stepDelay is the pause between the notifications of the progress and
// logging fixtures, so a client sees them arrive during the call.
const stepDelay = 50 * time.Millisecond

// json2020Schema is the input schema of json_schema_2020_12_tool: 2020-12
// keywords that tools/list must carry verbatim.
const json2020Schema = `{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"$defs": {
		"address": {
			"$anchor": "addressDef",
			"type": "object",
			"properties": {"street": {"type": "string"}, "city": {"type": "string"}}
		}
	},
	"properties": {
		"name": {"type": "string"},
		"address": {"$ref": "#/$defs/address"},
		"contactMethod": {"type": "string", "enum": ["phone", "email"]},
		"phone": {"type": "string"},
		"email": {"type": "string"}
	},
	"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
	"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
	"then": {"required": ["phone"]},
	"else": {"required": ["email"]},
	"additionalProperties": false
}`

// noArgs is the input schema of fixtures without arguments.
var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

// coreTools are the core tool fixtures.
func coreTools() []worker.Tool {
	syncTool := func(name, desc string, schema json.RawMessage, h worker.Handler) worker.Tool {
		if schema == nil {
			schema = noArgs
		}
		return worker.Tool{Name: name, Description: desc, InputSchema: schema, Policy: worker.PolicySync, Handler: h}
	}
	return []worker.Tool{
		syncTool("test_simple_text", "Returns one text block.", nil, fixed(worker.TextResult("This is a simple text response for testing."))),
		syncTool("test_image_content", "Returns one image block (a 1x1 red PNG).", nil,
			fixed(&proto.CallToolResult{Content: []proto.Content{imageContent()}})),
		syncTool("test_audio_content", "Returns one audio block (a short silent WAV).", nil,
			fixed(&proto.CallToolResult{Content: []proto.Content{audioContent()}})),
		syncTool("test_embedded_resource", "Returns one embedded text resource.", nil,
			fixed(&proto.CallToolResult{Content: []proto.Content{
				embeddedText("test://embedded-resource", "text/plain", "This is an embedded resource content."),
			}})),
		syncTool("test_multiple_content_types", "Returns a text, an image and an embedded resource block.", nil,
			fixed(&proto.CallToolResult{Content: []proto.Content{
				proto.TextContent("Multiple content types test:"),
				imageContent(),
				embeddedText("test://mixed-content-resource", "application/json", `{"test":"data","value":123}`),
			}})),
		syncTool("test_error_handling", "Always reports a tool error (isError).", nil,
			fixed(worker.ErrorResult("This tool intentionally returns an error for testing"))),
		syncTool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100 (to a request with a progressToken).", nil, toolWithProgress),
		syncTool("test_tool_with_logging", "Logs three info messages while it runs (to a request with a logLevel).", nil, toolWithLogging),
		syncTool("test_logging_tool", "Tries to log one info message; the server drops it unless the request set a logLevel.", nil, loggingTool),
		syncTool("test_missing_capability", "Needs the sampling client capability: answers -32021 to a request that did not declare it.", nil, missingCapability),
		syncTool("test_streaming_elicitation", "Answers with a plain result; it never sends a request on the response stream.", nil,
			fixed(worker.TextResult("stream observed: result frames only, no top-level requests"))),
		syncTool("test_trigger_tool_change", "Registers a tool again, so listeners get notifications/tools/list_changed.", nil, triggerToolChange),
		syncTool("test_trigger_prompt_change", "Registers a prompt again, so listeners get notifications/prompts/list_changed.", nil, triggerPromptChange),
		syncTool("json_schema_2020_12_tool", "Takes arguments described with JSON Schema 2020-12 keywords; echoes them.",
			json.RawMessage(json2020Schema), echoArguments("JSON Schema 2020-12 tool called with: ")),
		syncTool("test_x_mcp_header", "Its region argument is mirrored into the Mcp-Param-Region header (x-mcp-header).",
			json.RawMessage(`{"type":"object","properties":{`+
				`"region":{"type":"string","description":"Mirrored into Mcp-Param-Region","x-mcp-header":"Region"},`+
				`"level":{"type":"integer","description":"Not mirrored"}}}`),
			xMcpHeader),
	}
}

// fixed is a handler that always answers res.
func fixed(res *proto.CallToolResult) worker.Handler {
	return func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
		out := *res
		out.Content = append([]proto.Content(nil), res.Content...)
		return &out, nil
	}
}

func toolWithProgress(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	const total = 100
	for i, p := range []float64{0, 50, 100} {
		if i > 0 {
			if err := c.Step(ctx, func(ctx context.Context) error { return worker.Sleep(ctx, stepDelay) }); err != nil {
				return nil, err
			}
		}
		if err := c.ReportProgress(ctx, p, total, fmt.Sprintf("Completed %g of %d", p, total)); err != nil {
			return nil, err
		}
	}
	return worker.TextResult("Progress reported: 0, 50 and 100 of 100"), nil
}

func toolWithLogging(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			if err := c.Step(ctx, func(ctx context.Context) error { return worker.Sleep(ctx, stepDelay) }); err != nil {
				return nil, err
			}
		}
		if err := c.Log(ctx, "info", msg); err != nil {
			return nil, err
		}
	}
	return worker.TextResult("Tool with logging executed successfully"), nil
}

func loggingTool(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	if err := c.Log(ctx, "info", "test_logging_tool executed"); err != nil {
		return nil, err
	}
	return worker.TextResult("Log attempted; the server sends it only to a request that set a logLevel."), nil
}

func missingCapability(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	if c.Capabilities().Sampling == nil {
		return nil, proto.MissingCapability("This tool requires the sampling client capability",
			proto.ClientCapabilities{Sampling: json.RawMessage(`{}`)})
	}
	return worker.TextResult("The client declared the sampling capability; the tool ran."), nil
}

func triggerToolChange(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	err := c.Worker().AddTool(ctx, worker.Tool{
		Name:        probeTool,
		Description: "Registered again by test_trigger_tool_change to announce a tools list change; does nothing.",
		InputSchema: noArgs,
		Policy:      worker.PolicySync,
		Handler:     fixed(worker.TextResult("The list-change probe did nothing.")),
	})
	if err != nil {
		return nil, err
	}
	return worker.TextResult("tools/list_changed announced"), nil
}

func triggerPromptChange(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	err := c.Worker().AddPrompt(ctx, worker.Prompt{
		Prompt: proto.Prompt{Name: probePrompt,
			Description: "Registered again by test_trigger_prompt_change to announce a prompts list change."},
		Handler: func(context.Context, *worker.Call) (*proto.GetPromptResult, error) {
			return &proto.GetPromptResult{Messages: []proto.PromptMessage{
				{Role: "user", Content: proto.TextContent("The list-change probe prompt.")}}}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return worker.TextResult("prompts/list_changed announced"), nil
}

// echoArguments answers prefix followed by the compact arguments object.
func echoArguments(prefix string) worker.Handler {
	return func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
		var v any
		if err := c.Bind(&v); err != nil {
			return nil, err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return worker.TextResult(prefix + string(b)), nil
	}
}

func xMcpHeader(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	var a struct {
		Region string `json:"region"`
		Level  *int   `json:"level"`
	}
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	return worker.TextResult("region=" + a.Region), nil
}
