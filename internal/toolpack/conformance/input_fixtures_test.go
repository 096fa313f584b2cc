package conformance_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// Answers the tests give, in the shapes clients send.
const (
	acceptAlice   = `{"action":"accept","content":{"name":"Alice"}}`
	acceptConfirm = `{"action":"accept","content":{"confirm":true}}`
	acceptOK      = `{"action":"accept","content":{"ok":true}}`
	samplingParis = `{"role":"assistant","content":{"type":"text","text":"Paris."},"model":"test-model","stopReason":"endTurn"}`
	rootsOne      = `{"roots":[{"uri":"file:///test/root","name":"Test Root"}]}`
)

// round is one round of questions: the keys (and their methods) the task
// must park with, and the answers to give.
type round struct {
	methods map[string]string
	answers map[string]string
}

// TestFixturesInput runs the fixtures that ask for input: each task must
// park in input_required with the expected keys; once answered (as
// tasks/update and MRTR retries do) and re-enqueued, it must finish with
// the expected result.
func TestFixturesInput(t *testing.T) {
	t.Parallel()
	elicitation := proto.MethodElicit
	cases := []struct {
		name, key, args, caps string
		rounds                []round
		check                 func(t *testing.T, rec *taskstate.Record)
	}{
		{name: "confirm_delete accepted", key: "confirm_delete", args: `{"filename":"a.txt"}`, caps: capsAll,
			rounds: []round{{map[string]string{"confirm": elicitation}, map[string]string{"confirm": acceptConfirm}}},
			check:  wantText("Deleted a.txt")},
		{name: "confirm_delete declined", key: "confirm_delete", args: `{"filename":"b.txt"}`, caps: `{"elicitation":{}}`,
			rounds: []round{{map[string]string{"confirm": elicitation}, map[string]string{"confirm": `{"action":"decline"}`}}},
			check:  wantText("Kept b.txt")},
		{name: "multi_input", key: "multi_input", args: `{}`, caps: capsAll,
			rounds: []round{{map[string]string{"name": elicitation, "confirm": elicitation}, map[string]string{
				"name": `{"action":"accept","content":{"name":"partial-1","confirm":true}}`, "confirm": acceptConfirm}}},
			check: wantText("Hello, partial-1! (both inputs received)")},
		{name: "test_tool_with_task", key: "test_tool_with_task", args: `{}`, caps: capsAll,
			rounds: []round{{map[string]string{"user_name": elicitation}, map[string]string{"user_name": acceptAlice}}},
			check:  wantText("Hello, Alice! (from a task)")},
		{name: "elicitation", key: "test_input_required_result_elicitation", args: `{}`, caps: capsAll,
			rounds: []round{{map[string]string{"user_name": elicitation}, map[string]string{"user_name": acceptAlice}}},
			check:  wantText("Hello, Alice!")},
		{name: "elicitation declined", key: "test_input_required_result_elicitation", args: `{}`, caps: capsAll,
			rounds: []round{{map[string]string{"user_name": elicitation}, map[string]string{"user_name": `{"action":"cancel"}`}}},
			check:  wantText("No name given (cancel).")},
		{name: "elicitation with an invalid answer", key: "test_input_required_result_elicitation", args: `{}`, caps: capsAll,
			rounds: []round{{map[string]string{"user_name": elicitation}, map[string]string{"user_name": `12345`}}},
			check:  func(t *testing.T, rec *taskstate.Record) { failedWith(t, rec, proto.CodeInvalidParams) }},
		{name: "sampling", key: "test_input_required_result_sampling", args: `{}`, caps: capsAll,
			rounds: []round{{map[string]string{"capital_question": proto.MethodCreateMessage},
				map[string]string{"capital_question": samplingParis}}},
			check: wantText("Sampling response: Paris.")},
		{name: "list_roots", key: "test_input_required_result_list_roots", args: `{}`, caps: capsAll,
			rounds: []round{{map[string]string{"client_roots": proto.MethodListRoots}, map[string]string{"client_roots": rootsOne}}},
			check:  wantText("Client exposed 1 root(s): file:///test/root")},
		{name: "request_state", key: "test_input_required_result_request_state", args: `{}`, caps: capsAll,
			rounds: []round{{map[string]string{"confirm": elicitation}, map[string]string{"confirm": acceptOK}}},
			check:  wantTextPrefix("state-ok")},
		{name: "tampered_state", key: "test_input_required_result_tampered_state", args: `{}`, caps: capsAll,
			rounds: []round{{map[string]string{"confirm": elicitation}, map[string]string{"confirm": acceptOK}}},
			check:  wantTextPrefix("state-ok")},
		{name: "multiple_inputs", key: "test_input_required_result_multiple_inputs", args: `{}`, caps: capsAll,
			rounds: []round{{
				map[string]string{"user_name": elicitation, "greeting": proto.MethodCreateMessage, "client_roots": proto.MethodListRoots},
				map[string]string{"user_name": acceptAlice, "client_roots": rootsOne,
					"greeting": `{"role":"assistant","content":[{"type":"text","text":"Hello there!"}],"model":"m"}`}}},
			check: wantText("Hello there! Alice — 1 root(s) visible")},
		{name: "multi_round", key: "test_input_required_result_multi_round", args: `{}`, caps: capsAll,
			rounds: []round{
				{map[string]string{"step1": elicitation}, map[string]string{"step1": acceptAlice}},
				{map[string]string{"step2": elicitation}, map[string]string{"step2": `{"action":"accept","content":{"color":"blue"}}`}},
			},
			check: wantText("Multi-round complete: Alice likes blue")},
		{name: "capabilities: sampling only", key: "test_input_required_result_capabilities", args: `{}`, caps: `{"sampling":{}}`,
			rounds: []round{{map[string]string{"greeting": proto.MethodCreateMessage}, map[string]string{"greeting": samplingParis}}},
			check:  wantText("Capability-aware input requests fulfilled: greeting")},
		{name: "capabilities: all", key: "test_input_required_result_capabilities", args: `{}`, caps: capsAll,
			rounds: []round{{
				map[string]string{"user_name": elicitation, "greeting": proto.MethodCreateMessage, "client_roots": proto.MethodListRoots},
				map[string]string{"user_name": acceptAlice, "greeting": samplingParis, "client_roots": rootsOne}}},
			check: wantText("Capability-aware input requests fulfilled: user_name, greeting, client_roots")},
		{name: "prompt", key: catalog.EntryKey(catalog.KindPrompt, "test_input_required_result_prompt"), args: `null`, caps: capsAll,
			rounds: []round{{map[string]string{"user_context": elicitation},
				map[string]string{"user_context": `{"action":"accept","content":{"context":"test context"}}`}}},
			check: wantMessages(`[{"role":"user","content":{"type":"text","text":"Context: test context"}}]`)},
		{name: "elicitation undeclared", key: "test_input_required_result_elicitation", args: `{}`, caps: `{"sampling":{}}`,
			check: wantMissing(`{"elicitation":{}}`)},
		{name: "multiple_inputs undeclared", key: "test_input_required_result_multiple_inputs", args: `{}`, caps: `{"elicitation":{}}`,
			check: wantMissing(`{"sampling":{},"roots":{}}`)},
		{name: "confirm_delete undeclared", key: "confirm_delete", args: `{"filename":"c.txt"}`,
			caps:  `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`,
			check: wantMissing(`{"elicitation":{}}`)},
		{name: "confirm_delete without a filename", key: "confirm_delete", args: `{}`, caps: capsAll,
			check: func(t *testing.T, rec *taskstate.Record) { failedWith(t, rec, proto.CodeInvalidParams) }},
	}
	e := fxStart(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tk := e.run(t, tc.key, tc.args, tc.caps)
			for _, r := range tc.rounds {
				keys := make([]string, 0, len(r.methods))
				for k := range r.methods {
					keys = append(keys, k)
				}
				reqs := e.parked(t, tk, keys...)
				for k, m := range r.methods {
					if reqs[k].Method != m {
						t.Errorf("request %s: method %q, want %q", k, reqs[k].Method, m)
					}
					checkParams(t, k, reqs[k])
				}
				if !e.answer(t, tk, r.answers) {
					t.Fatalf("answering every key did not resume the task")
				}
			}
			tc.check(t, e.terminal(t, tk))
		})
	}
}

// checkParams checks the shape of an input request's params.
func checkParams(t *testing.T, key string, r proto.InputRequest) {
	t.Helper()
	b, _ := json.Marshal(r.Params)
	switch r.Method {
	case proto.MethodElicit:
		var p struct {
			Message         string `json:"message"`
			RequestedSchema struct {
				Type       string                    `json:"type"`
				Properties map[string]map[string]any `json:"properties"`
				Required   []string                  `json:"required"`
			} `json:"requestedSchema"`
		}
		if err := json.Unmarshal(b, &p); err != nil || p.Message == "" || p.RequestedSchema.Type != "object" ||
			len(p.RequestedSchema.Properties) == 0 || len(p.RequestedSchema.Required) == 0 {
			t.Errorf("%s: elicitation params %s", key, b)
		}
	case proto.MethodCreateMessage:
		var p struct {
			Messages []struct {
				Role    string        `json:"role"`
				Content proto.Content `json:"content"`
			} `json:"messages"`
			MaxTokens int `json:"maxTokens"`
		}
		if err := json.Unmarshal(b, &p); err != nil || len(p.Messages) != 1 || p.Messages[0].Role != "user" ||
			p.Messages[0].Content.Text == "" || p.MaxTokens <= 0 {
			t.Errorf("%s: sampling params %s", key, b)
		}
	case proto.MethodListRoots:
		if string(b) != "{}" {
			t.Errorf("%s: roots params %s, want {}", key, b)
		}
	}
}

func wantTextPrefix(prefix string) func(*testing.T, *taskstate.Record) {
	return func(t *testing.T, rec *taskstate.Record) {
		t.Helper()
		if got := onlyText(t, toolResult(t, rec)); !strings.HasPrefix(got, prefix) {
			t.Errorf("text %q, want it to start with %q", got, prefix)
		}
	}
}

func wantMissing(required string) func(*testing.T, *taskstate.Record) {
	return func(t *testing.T, rec *taskstate.Record) {
		t.Helper()
		data := failedWith(t, rec, proto.CodeMissingRequiredClientCapability)
		if !jsonEqual(t, data, `{"requiredCapabilities":`+required+`}`) {
			t.Errorf("data %s, want requiredCapabilities %s", data, required)
		}
	}
}

// TestFixturesPartialAnswers: multi_input stays in input_required with only
// the unanswered key after a partial answer, and completes after the rest.
func TestFixturesPartialAnswers(t *testing.T) {
	t.Parallel()
	e := fxStart(t)
	tk := e.run(t, "multi_input", `{}`, capsAll)
	e.parked(t, tk, "name", "confirm")
	if e.answer(t, tk, map[string]string{"name": acceptAlice}) {
		t.Fatal("a partial answer resumed the task")
	}
	e.parked(t, tk, "confirm")
	if !e.answer(t, tk, map[string]string{"confirm": `{"action":"accept","content":{"confirm":false}}`}) {
		t.Fatal("the last answer did not resume the task")
	}
	wantText("Not greeting Alice: not confirmed")(t, e.terminal(t, tk))
}

// TestFixturesTaskCancel: test_tool_with_task, cancelled during its work
// after the input, ends cancelled.
func TestFixturesTaskCancel(t *testing.T) {
	t.Parallel()
	e := fxStart(t)
	tk := e.run(t, "test_tool_with_task", `{}`, capsAll)
	e.parked(t, tk, "user_name")
	e.answer(t, tk, map[string]string{"user_name": acceptAlice})
	e.await(t, tk, "work after the input", func(r *taskstate.Record) bool {
		return r.Status == proto.StatusWorking && strings.HasPrefix(r.StatusMessage, "Preparing a greeting for Alice")
	})
	if err := e.store.RequestCancel(context.Background(), tk.ref); err != nil {
		t.Fatalf("RequestCancel: %v", err)
	}
	if rec := e.terminal(t, tk); rec.Status != proto.StatusCancelled {
		t.Fatalf("ended %s %s, want cancelled", rec.Status, rec.Result)
	}
}

// TestFixturesNotifications: the progress and logging fixtures publish
// their notifications to the request waiting on the task.
func TestFixturesNotifications(t *testing.T) {
	t.Parallel()
	e := fxStart(t)
	t.Run("progress", func(t *testing.T) {
		t.Parallel()
		tk := e.run(t, "test_tool_with_progress", `{}`, capsNone)
		toolResult(t, e.drain(t, tk))
		var got []float64
		for _, n := range tk.notes {
			var p proto.ProgressParams
			if n.Method != proto.NotifyProgress || json.Unmarshal(n.Params, &p) != nil || p.Total == nil || *p.Total != 100 {
				t.Fatalf("notification %s %s, want progress of 100", n.Method, n.Params)
			}
			got = append(got, p.Progress)
		}
		if len(got) != 3 || got[0] != 0 || got[1] != 50 || got[2] != 100 {
			t.Errorf("progress %v, want [0 50 100]", got)
		}
	})
	for _, tc := range []struct {
		tool string
		want []string
	}{
		{"test_tool_with_logging", []string{"Tool execution started", "Tool processing data", "Tool execution completed"}},
		{"test_logging_tool", []string{"test_logging_tool executed"}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			t.Parallel()
			tk := e.run(t, tc.tool, `{}`, capsNone)
			toolResult(t, e.drain(t, tk))
			var got []string
			for _, n := range tk.notes {
				var p proto.LoggingMessageParams
				if n.Method != proto.NotifyMessage || json.Unmarshal(n.Params, &p) != nil || p.Level != "info" {
					t.Fatalf("notification %s %s, want an info log message", n.Method, n.Params)
				}
				s, _ := p.Data.(string)
				got = append(got, s)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("logged %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFixturesListChanged: the trigger tools register an entry again, which
// publishes it and announces the list change.
func TestFixturesListChanged(t *testing.T) {
	t.Parallel()
	e := fxStart(t)
	ctx := context.Background()
	lists, err := e.hub.Subscribe(ctx, e.store.Catalog().Keys().Lists())
	if err != nil {
		t.Fatal(err)
	}
	defer lists.Close()
	for _, tc := range []struct{ tool, list, key string }{
		{"test_trigger_tool_change", catalog.ListTools, "_list_changed_probe"},
		{"test_trigger_prompt_change", catalog.ListPrompts, catalog.EntryKey(catalog.KindPrompt, "_list_changed_probe_prompt")},
	} {
		for i := range 2 { // every call announces, also when the entry exists
			toolResult(t, e.terminal(t, e.run(t, tc.tool, `{}`, capsNone)))
			select {
			case got := <-lists.C:
				if got != tc.list {
					t.Fatalf("%s call %d announced %q, want %q", tc.tool, i, got, tc.list)
				}
			case <-timeAfter(t):
				t.Fatalf("%s call %d announced nothing", tc.tool, i)
			}
		}
		defs, err := e.store.Catalog().Entries(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range defs {
			if d.Key() == tc.key {
				found = true
				if d.Kind == catalog.KindTool && (d.Tool.Description == "" || d.Policy != proto.PolicySync) {
					t.Errorf("probe tool %+v", d)
				}
			}
		}
		if !found {
			t.Errorf("%s: %s not in the catalog", tc.tool, tc.key)
		}
	}
	wantText("The list-change probe did nothing.")(t, e.terminal(t, e.run(t, "_list_changed_probe", `{}`, capsNone)))
	wantMessages(`[{"role":"user","content":{"type":"text","text":"The list-change probe prompt."}}]`)(t,
		e.terminal(t, e.run(t, catalog.EntryKey(catalog.KindPrompt, "_list_changed_probe_prompt"), `null`, capsNone)))
}

// TestFixturesWatchedResource: the watched resource is announced as updated.
func TestFixturesWatchedResource(t *testing.T) {
	t.Parallel()
	e := fxStart(t)
	updates, err := e.hub.Subscribe(context.Background(), e.store.Catalog().Keys().ResourceUpdates())
	if err != nil {
		t.Fatal(err)
	}
	defer updates.Close()
	select {
	case uri := <-updates.C:
		if uri != "test://watched-resource" {
			t.Errorf("update of %q", uri)
		}
	case <-timeAfter(t):
		t.Fatal("no update of test://watched-resource")
	}
}
