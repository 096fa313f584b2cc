package conformance_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// TestFixturesCatalog: Register publishes every fixture the suite calls by
// name, with the policies and shapes the suite's scenarios rely on.
func TestFixturesCatalog(t *testing.T) {
	t.Parallel()
	e := fxStart(t)
	// A finished job shows the worker ran, so it published the catalog.
	toolResult(t, e.terminal(t, e.run(t, "test_simple_text", `{}`, capsNone)))
	defs, err := e.store.Catalog().Entries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]catalog.Entry{}
	for _, d := range defs {
		byKey[d.Key()] = d
	}

	tools := map[string]struct {
		policy   proto.Policy
		budgetMs int64
	}{
		"greet": {proto.PolicySync, 0}, "slow_compute": {proto.PolicyAuto, 0},
		"failing_job": {proto.PolicyTask, 0}, "protocol_error_job": {proto.PolicyAuto, 0},
		"confirm_delete": {proto.PolicyTask, 0}, "multi_input": {proto.PolicyTask, 0},
		"test_tool_with_task": {proto.PolicyTask, 500},
	}
	for _, n := range []string{"test_simple_text", "test_image_content", "test_audio_content",
		"test_embedded_resource", "test_multiple_content_types", "test_error_handling",
		"test_tool_with_progress", "test_tool_with_logging", "test_missing_capability",
		"test_streaming_elicitation", "test_logging_tool", "test_trigger_tool_change",
		"test_trigger_prompt_change", "json_schema_2020_12_tool", "test_x_mcp_header",
		"test_input_required_result_elicitation", "test_input_required_result_sampling",
		"test_input_required_result_list_roots", "test_input_required_result_request_state",
		"test_input_required_result_multiple_inputs", "test_input_required_result_multi_round",
		"test_input_required_result_tampered_state", "test_input_required_result_capabilities",
		"test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"} {
		tools[n] = struct {
			policy   proto.Policy
			budgetMs int64
		}{proto.PolicySync, 0}
	}
	nTools := 0
	for _, d := range defs {
		if d.Kind == catalog.KindTool {
			nTools++
		}
	}
	if nTools != len(tools) {
		t.Errorf("catalog has %d tools, want %d", nTools, len(tools))
	}
	for name, want := range tools {
		d, ok := byKey[name]
		if !ok {
			t.Errorf("tool %s missing", name)
			continue
		}
		if d.Policy != want.policy || d.SyncBudgetMs != want.budgetMs {
			t.Errorf("%s: policy %q budget %dms, want %q %dms", name, d.Policy, d.SyncBudgetMs, want.policy, want.budgetMs)
		}
		var schema map[string]any
		if err := json.Unmarshal(d.Tool.InputSchema, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: input schema %s is not an object schema (%v)", name, d.Tool.InputSchema, err)
		}
		if d.Tool.Description == "" {
			t.Errorf("%s: no description", name)
		}
	}

	var js map[string]json.RawMessage
	_ = json.Unmarshal(byKey["json_schema_2020_12_tool"].Tool.InputSchema, &js)
	for _, k := range []string{"$schema", "$defs", "additionalProperties", "allOf", "if", "then", "else"} {
		if _, ok := js[k]; !ok {
			t.Errorf("json_schema_2020_12_tool: schema lacks %s", k)
		}
	}
	var defsOf struct {
		Address struct {
			Anchor string `json:"$anchor"`
		} `json:"address"`
	}
	if _ = json.Unmarshal(js["$defs"], &defsOf); defsOf.Address.Anchor != "addressDef" {
		t.Errorf("json_schema_2020_12_tool: $defs %s lacks the $anchor", js["$defs"])
	}
	var xh struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	_ = json.Unmarshal(byKey["test_x_mcp_header"].Tool.InputSchema, &xh)
	if r := xh.Properties["region"]; r["x-mcp-header"] != "Region" || r["type"] != "string" {
		t.Errorf("test_x_mcp_header: region property %v", r)
	}

	for _, p := range []string{"test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource",
		"test_prompt_with_image", "test_input_required_result_prompt"} {
		d, ok := byKey[catalog.EntryKey(catalog.KindPrompt, p)]
		if !ok || d.Prompt == nil || d.Prompt.Description == "" {
			t.Errorf("prompt %s missing or without description (%+v)", p, d.Prompt)
		}
	}
	if a := byKey[catalog.EntryKey(catalog.KindPrompt, "test_prompt_with_arguments")].Prompt; a == nil ||
		len(a.Arguments) != 2 || !a.Arguments[0].Required || !a.Arguments[1].Required {
		t.Errorf("test_prompt_with_arguments: arguments %+v, want arg1 and arg2 required", a)
	}
	for _, uri := range []string{"test://static-text", "test://static-binary", "test://watched-resource"} {
		d, ok := byKey[catalog.EntryKey(catalog.KindResource, uri)]
		if !ok || d.Resource == nil || d.Resource.Name == "" || d.Resource.Description == "" || d.Resource.MimeType == "" {
			t.Errorf("resource %s missing or incomplete (%+v)", uri, d.Resource)
		}
	}
	if d, ok := byKey[catalog.EntryKey(catalog.KindTemplate, "test://template/{id}/data")]; !ok || d.Template.Name == "" {
		t.Errorf("template missing or without a name")
	}
	// Store.Tools leaves out the completion entry (it has no name), so read
	// the published catalog field itself.
	if err := e.rdb.HGet(context.Background(), e.store.Catalog().Keys().Entries(),
		catalog.EntryKey(catalog.KindCompletion, "")).Err(); err != nil {
		t.Errorf("no completion handler published: %v", err)
	}
}

// TestFixturesResults runs every fixture that answers without input.
func TestFixturesResults(t *testing.T) {
	t.Parallel()
	prompt := func(n string) string { return catalog.EntryKey(catalog.KindPrompt, n) }
	resource := func(u string) string { return catalog.EntryKey(catalog.KindResource, u) }
	cases := []struct {
		name, key, args, caps string
		check                 func(t *testing.T, rec *taskstate.Record)
	}{
		{"simple text", "test_simple_text", `{}`, capsNone, wantText("This is a simple text response for testing.")},
		{"image", "test_image_content", `{}`, capsNone, func(t *testing.T, rec *taskstate.Record) {
			res := toolResult(t, rec)
			if len(res.Content) != 1 {
				t.Fatalf("content %+v", res.Content)
			}
			checkPNG(t, res.Content[0])
		}},
		{"audio", "test_audio_content", `{}`, capsNone, func(t *testing.T, rec *taskstate.Record) {
			res := toolResult(t, rec)
			if len(res.Content) != 1 || res.Content[0].Type != "audio" || res.Content[0].MimeType != "audio/wav" {
				t.Fatalf("content %+v, want one audio/wav block", res.Content)
			}
			b, err := base64.StdEncoding.DecodeString(res.Content[0].Data)
			if err != nil || len(b) < 44 || string(b[:4]) != "RIFF" || string(b[8:16]) != "WAVEfmt " {
				t.Errorf("audio data is not a WAV file (%v)", err)
			}
		}},
		{"embedded resource", "test_embedded_resource", `{}`, capsNone, func(t *testing.T, rec *taskstate.Record) {
			res := toolResult(t, rec)
			if len(res.Content) != 1 || res.Content[0].Type != "resource" ||
				!jsonEqual(t, res.Content[0].Resource, `{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}`) {
				t.Errorf("content %+v", res.Content)
			}
		}},
		{"multiple content types", "test_multiple_content_types", `{}`, capsNone, func(t *testing.T, rec *taskstate.Record) {
			res := toolResult(t, rec)
			var types []string
			for _, c := range res.Content {
				types = append(types, c.Type)
			}
			if strings.Join(types, ",") != "text,image,resource" {
				t.Fatalf("content types %v", types)
			}
			checkPNG(t, res.Content[1])
			if !jsonEqual(t, res.Content[2].Resource, `{"uri":"test://mixed-content-resource","mimeType":"application/json","text":"{\"test\":\"data\",\"value\":123}"}`) {
				t.Errorf("resource %s", res.Content[2].Resource)
			}
		}},
		{"error handling", "test_error_handling", `{}`, capsNone, func(t *testing.T, rec *taskstate.Record) {
			res := toolResult(t, rec)
			if !res.IsError || onlyText(t, res) == "" {
				t.Errorf("result %s, want a tool error with text", rec.Result)
			}
		}},
		{"missing capability undeclared", "test_missing_capability", `{}`, capsNone, func(t *testing.T, rec *taskstate.Record) {
			if data := failedWith(t, rec, proto.CodeMissingRequiredClientCapability); !jsonEqual(t, data, `{"requiredCapabilities":{"sampling":{}}}`) {
				t.Errorf("data %s", data)
			}
		}},
		{"missing capability declared", "test_missing_capability", `{}`, `{"sampling":{}}`,
			wantText("The client declared the sampling capability; the tool ran.")},
		{"streaming elicitation", "test_streaming_elicitation", `{}`, `{"elicitation":{}}`,
			wantText("stream observed: result frames only, no top-level requests")},
		{"json schema 2020-12", "json_schema_2020_12_tool", `{"name":"Ada","email":"ada@example.com"}`, capsNone,
			wantText(`JSON Schema 2020-12 tool called with: {"email":"ada@example.com","name":"Ada"}`)},
		{"x-mcp-header", "test_x_mcp_header", `{"region":"eu-west-1","level":3}`, capsNone, wantText("region=eu-west-1")},
		{"capabilities none declared", "test_input_required_result_capabilities", `{}`, capsNone,
			wantText("No declared client capability supports an input request; nothing asked.")},
		{"simple prompt", prompt("test_simple_prompt"), `null`, capsNone,
			wantMessages(`[{"role":"user","content":{"type":"text","text":"This is a simple prompt for testing."}}]`)},
		{"prompt with arguments", prompt("test_prompt_with_arguments"), `{"arg1":"testValue1","arg2":"testValue2"}`, capsNone,
			wantMessages(`[{"role":"user","content":{"type":"text","text":"Prompt with arguments: arg1='testValue1', arg2='testValue2'"}}]`)},
		{"prompt with embedded resource", prompt("test_prompt_with_embedded_resource"), `{"resourceUri":"test://example-resource"}`, capsNone,
			wantMessages(`[{"role":"user","content":{"type":"resource","resource":{"uri":"test://example-resource","mimeType":"text/plain","text":"Embedded resource content for testing."}}},
				{"role":"user","content":{"type":"text","text":"Please process the embedded resource above."}}]`)},
		{"prompt with embedded resource without uri", prompt("test_prompt_with_embedded_resource"), `{}`, capsNone,
			func(t *testing.T, rec *taskstate.Record) { failedWith(t, rec, proto.CodeInvalidParams) }},
		{"prompt with image", prompt("test_prompt_with_image"), `{}`, capsNone, func(t *testing.T, rec *taskstate.Record) {
			var res proto.GetPromptResult
			if rec.Status != proto.StatusCompleted || json.Unmarshal(rec.Result, &res) != nil || len(res.Messages) != 2 {
				t.Fatalf("got %s %s", rec.Status, rec.Result)
			}
			checkPNG(t, res.Messages[0].Content)
			if res.Messages[1].Content.Text != "Please analyze the image above." {
				t.Errorf("second message %+v", res.Messages[1])
			}
		}},
		{"static text", resource("test://static-text"), `{"uri":"test://static-text"}`, capsNone,
			wantRead(`{"uri":"test://static-text","mimeType":"text/plain","text":"This is the content of the static text resource."}`)},
		{"watched", resource("test://watched-resource"), `{"uri":"test://watched-resource"}`, capsNone,
			wantRead(`{"uri":"test://watched-resource","mimeType":"text/plain","text":"Watched resource content"}`)},
		{"static binary", resource("test://static-binary"), `{"uri":"test://static-binary"}`, capsNone, func(t *testing.T, rec *taskstate.Record) {
			res := readResult(t, rec)
			c := res.Contents[0]
			if c.URI != "test://static-binary" || c.MimeType != "image/png" || c.Blob == nil || c.Text != nil {
				t.Fatalf("contents %+v", res.Contents)
			}
			checkPNG(t, proto.Content{Type: "image", MimeType: c.MimeType, Data: *c.Blob})
		}},
		{"template", catalog.EntryKey(catalog.KindTemplate, "test://template/{id}/data"),
			`{"uri":"test://template/123/data","variables":{"id":"123"}}`, capsNone, func(t *testing.T, rec *taskstate.Record) {
				res := readResult(t, rec)
				c := res.Contents[0]
				if c.URI != "test://template/123/data" || c.MimeType != "application/json" || c.Text == nil ||
					!jsonEqual(t, []byte(*c.Text), `{"id":"123","templateTest":true,"data":"Data for ID: 123"}`) {
					t.Errorf("contents %+v", res.Contents)
				}
			}},
		{"completion", catalog.EntryKey(catalog.KindCompletion, ""),
			`{"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},"argument":{"name":"arg1","value":"PAR"},"context":null}`,
			capsNone, wantCompletion(`{"values":["paris","park","party"],"total":3}`)},
		{"completion of an unknown argument", catalog.EntryKey(catalog.KindCompletion, ""),
			`{"ref":{"type":"ref/resource","uri":"test://template/{id}/data"},"argument":{"name":"nope","value":""},"context":null}`,
			capsNone, wantCompletion(`{"values":[]}`)},
		{"completion with a bad ref", catalog.EntryKey(catalog.KindCompletion, ""),
			`{"ref":{"type":"ref/tool","name":"x"},"argument":{"name":"arg1","value":""},"context":null}`,
			capsNone, func(t *testing.T, rec *taskstate.Record) { failedWith(t, rec, proto.CodeInvalidParams) }},
	}
	e := fxStart(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.check(t, e.terminal(t, e.run(t, tc.key, tc.args, tc.caps)))
		})
	}
}

func wantText(text string) func(*testing.T, *taskstate.Record) {
	return func(t *testing.T, rec *taskstate.Record) {
		t.Helper()
		res := toolResult(t, rec)
		if got := onlyText(t, res); got != text || res.IsError {
			t.Errorf("text %q (isError %v), want %q", got, res.IsError, text)
		}
	}
}

func wantMessages(messages string) func(*testing.T, *taskstate.Record) {
	return func(t *testing.T, rec *taskstate.Record) {
		t.Helper()
		var res struct {
			ResultType string          `json:"resultType"`
			Messages   json.RawMessage `json:"messages"`
		}
		if rec.Status != proto.StatusCompleted || json.Unmarshal(rec.Result, &res) != nil {
			t.Fatalf("got %s (error %+v) %s", rec.Status, rec.Error, rec.Result)
		}
		if res.ResultType != proto.ResultComplete || !jsonEqual(t, res.Messages, messages) {
			t.Errorf("result %s, want messages %s", rec.Result, messages)
		}
	}
}

func readResult(t *testing.T, rec *taskstate.Record) proto.ReadResourceResult {
	t.Helper()
	var res proto.ReadResourceResult
	if rec.Status != proto.StatusCompleted || json.Unmarshal(rec.Result, &res) != nil {
		t.Fatalf("got %s (error %+v) %s", rec.Status, rec.Error, rec.Result)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("contents %+v, want one", res.Contents)
	}
	if res.ResultType != proto.ResultComplete || res.CacheScope != proto.CachePublic || res.TTLMs < 0 {
		t.Errorf("resultType %q cacheScope %q ttlMs %d", res.ResultType, res.CacheScope, res.TTLMs)
	}
	return res
}

func wantRead(contents string) func(*testing.T, *taskstate.Record) {
	return func(t *testing.T, rec *taskstate.Record) {
		t.Helper()
		res := readResult(t, rec)
		b, _ := json.Marshal(res.Contents[0])
		if !jsonEqual(t, b, contents) {
			t.Errorf("contents %s, want %s", b, contents)
		}
	}
}

func wantCompletion(completion string) func(*testing.T, *taskstate.Record) {
	return func(t *testing.T, rec *taskstate.Record) {
		t.Helper()
		var res struct {
			ResultType string          `json:"resultType"`
			Completion json.RawMessage `json:"completion"`
		}
		if rec.Status != proto.StatusCompleted || json.Unmarshal(rec.Result, &res) != nil {
			t.Fatalf("got %s (error %+v) %s", rec.Status, rec.Error, rec.Result)
		}
		if res.ResultType != proto.ResultComplete || !jsonEqual(t, res.Completion, completion) {
			t.Errorf("result %s, want completion %s", rec.Result, completion)
		}
	}
}

// checkPNG checks that c is an image block holding a 1×1 PNG.
func checkPNG(t *testing.T, c proto.Content) {
	t.Helper()
	if c.Type != "image" || c.MimeType != "image/png" {
		t.Fatalf("block %+v, want an image/png block", c)
	}
	b, err := base64.StdEncoding.DecodeString(c.Data)
	if err != nil {
		t.Fatalf("image data: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("image data is not a PNG: %v", err)
	}
	if r := img.Bounds(); r.Dx() != 1 || r.Dy() != 1 {
		t.Errorf("image is %dx%d, want 1x1", r.Dx(), r.Dy())
	}
}
