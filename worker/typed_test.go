package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

type bookArgs struct {
	City   string   `json:"city" jsonschema:"where to stay"`
	Nights int      `json:"nights" mcpq:"minimum=1,maximum=30"`
	Class  string   `json:"class,omitempty" mcpq:"enum=economy|business"`
	Tags   []string `json:"tags,omitempty" mcpq:"maxItems=3"`
}

type booking struct {
	Ref   string  `json:"ref"`
	Price float64 `json:"price"`
}

func bookTool() worker.Tool {
	return worker.NewTool("book", "Books a hotel.", func(ctx context.Context, c *worker.Call, in bookArgs) (booking, error) {
		if in.City == "Atlantis" {
			return booking{}, errors.New("no hotels in Atlantis")
		}
		return booking{Ref: in.City + "-" + in.Class, Price: float64(in.Nights) * 100}, nil
	})
}

func TestNewToolInfersSchemas(t *testing.T) {
	tl := bookTool()
	var in struct {
		Type       string   `json:"type"`
		Required   []string `json:"required"`
		Additional *bool    `json:"additionalProperties"`
		Properties map[string]struct {
			Type        any      `json:"type"`
			Description string   `json:"description"`
			Minimum     *float64 `json:"minimum"`
			Maximum     *float64 `json:"maximum"`
			Enum        []any    `json:"enum"`
			MaxItems    *int     `json:"maxItems"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tl.InputSchema, &in); err != nil {
		t.Fatalf("input schema %s: %v", tl.InputSchema, err)
	}
	p := in.Properties
	switch {
	case in.Type != "object" || in.Additional == nil || *in.Additional:
		t.Errorf("input schema %s: want a closed object", tl.InputSchema)
	case strings.Join(in.Required, ",") != "city,nights":
		t.Errorf("required %v, want city and nights", in.Required)
	case p["city"].Description != "where to stay":
		t.Errorf("city description %q", p["city"].Description)
	case p["nights"].Type != "integer" || p["nights"].Minimum == nil || *p["nights"].Minimum != 1 || *p["nights"].Maximum != 30:
		t.Errorf("nights schema %+v", p["nights"])
	case len(p["class"].Enum) != 2 || p["class"].Enum[1] != "business":
		t.Errorf("class enum %v", p["class"].Enum)
	case p["tags"].MaxItems == nil || *p["tags"].MaxItems != 3:
		t.Errorf("tags schema %+v", p["tags"])
	}
	var out struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(tl.OutputSchema, &out); err != nil || out.Type != "object" || len(out.Properties) != 2 {
		t.Errorf("output schema %s: %v", tl.OutputSchema, err)
	}
	if s := worker.NewTool("echo", "", func(ctx context.Context, c *worker.Call, in bookArgs) (string, error) {
		return in.City, nil
	}); s.OutputSchema != nil {
		t.Errorf("a string result has output schema %s", s.OutputSchema)
	}
}

func TestNewToolRefusesWhatASchemaCannotSay(t *testing.T) {
	cases := map[string]worker.Tool{
		"input not an object": worker.NewTool("a", "", func(ctx context.Context, c *worker.Call, in int) (string, error) {
			return "", nil
		}),
		"unknown tag key": worker.NewTool("b", "", func(ctx context.Context, c *worker.Call, in struct {
			N int `json:"n" mcpq:"smallest=1"`
		}) (string, error) {
			return "", nil
		}),
		"bad bound": worker.NewTool("c", "", func(ctx context.Context, c *worker.Call, in struct {
			N int `json:"n" mcpq:"minimum=one"`
		}) (string, error) {
			return "", nil
		}),
		"channel field": worker.NewTool("d", "", func(ctx context.Context, c *worker.Call, in struct {
			C chan int `json:"c"`
		}) (string, error) {
			return "", nil
		}),
	}
	for name, tl := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := worker.New(worker.Config{Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})}, tl); err == nil {
				t.Fatal("New accepted the tool")
			} else if !strings.Contains(err.Error(), `tool "`+tl.Name+`"`) {
				t.Errorf("error %q does not name the tool", err)
			}
		})
	}
}

func TestTypedToolResults(t *testing.T) {
	env := mcpqtest.New(t, bookTool())
	res := env.Call(t, "book", bookArgs{City: "Oslo", Nights: 2, Class: "business"}).Result(t)
	if res.IsError || string(res.StructuredContent) != `{"ref":"Oslo-business","price":200}` ||
		len(res.Content) != 1 || res.Content[0].Text != string(res.StructuredContent) {
		t.Errorf("result %+v", res)
	}
	res = env.Call(t, "book", bookArgs{City: "Atlantis", Nights: 1}).Result(t)
	if !res.IsError || res.Content[0].Text != "no hotels in Atlantis" || res.StructuredContent != nil {
		t.Errorf("tool error result %+v", res)
	}
	res = env.Call(t, "book", map[string]any{"city": "Oslo", "nights": 31}).Result(t)
	if !res.IsError || !strings.Contains(res.Content[0].Text, `argument "nights"`) {
		t.Errorf("out of bounds result %+v", res)
	}
}

type contact struct {
	Email string `json:"email" jsonschema:"where to send the report" mcpq:"format=email"`
	Daily bool   `json:"daily,omitempty"`
}

// parkSwallower asks for input and turns every error into a result, which
// must not complete the task over its pending input.
func parkSwallower() worker.Tool {
	return worker.NewTool("swallow", "", func(ctx context.Context, c *worker.Call, _ struct{}) (string, error) {
		got, err := worker.Elicit[contact](ctx, c, "contact", "Where should the report go?")
		if err != nil {
			return "could not ask: " + err.Error(), nil
		}
		return got.Content.Email, nil
	})
}

func TestParkedCallStaysParkedWhateverTheHandlerReturns(t *testing.T) {
	env := mcpqtest.New(t, parkSwallower())
	run := env.Call(t, "swallow", nil)
	reqs := run.Input(t)
	var params struct {
		Message string `json:"message"`
		Schema  struct {
			Properties map[string]struct {
				Format string `json:"format"`
			} `json:"properties"`
			Additional any `json:"additionalProperties"`
		} `json:"requestedSchema"`
	}
	b, _ := json.Marshal(reqs["contact"].Params)
	if err := json.Unmarshal(b, &params); err != nil || params.Message != "Where should the report go?" ||
		params.Schema.Properties["email"].Format != "email" || params.Schema.Additional != nil {
		t.Fatalf("elicitation %s: %v", b, err)
	}
	// The delivery that parked has ended (only then is the state final).
	run.WaitFor(t, "parked delivery ended", func(s mcpqtest.State) bool { return len(run.Deliveries()) == 1 })
	if st := run.State(t); st.Status != proto.StatusInputRequired {
		t.Fatalf("status %s after the handler returned a result over its pending input", st.Status)
	}
	run.Accept(t, "contact", contact{Email: "ops@example.com"})
	if res := run.Result(t); res.Content[0].Text != "ops@example.com" {
		t.Errorf("result %+v", res)
	}
}

func TestInputNeedsTheClientCapability(t *testing.T) {
	env := mcpqtest.New(t, parkSwallower(), worker.NewTool("roots", "", func(ctx context.Context, c *worker.Call, _ struct{}) (*proto.CallToolResult, error) {
		roots, err := c.ListRoots(ctx, "roots")
		if err != nil {
			return nil, err
		}
		return worker.TextResult(roots[0].URI), nil
	}))
	// Without elicitation the handler gets -32021 instead of a parked task.
	res := env.Call(t, "swallow", nil, mcpqtest.WithCapabilities(proto.ClientCapabilities{})).Result(t)
	if !strings.Contains(res.Content[0].Text, "needs the elicitation client capability") {
		t.Errorf("result %+v", res)
	}
	st := env.Call(t, "roots", nil, mcpqtest.WithCapabilities(proto.ClientCapabilities{})).End(t)
	if st.Status != proto.StatusFailed || st.Error == nil || st.Error.Code != proto.CodeMissingRequiredClientCapability {
		t.Errorf("state %+v, want failed with -32021", st)
	}
	run := env.Call(t, "roots", nil)
	if reqs := run.Input(t); reqs["roots"].Method != proto.MethodListRoots {
		t.Fatalf("requests %+v", reqs)
	}
	run.Answer(t, map[string]any{"roots": map[string]any{"roots": []any{map[string]any{"uri": "file:///src"}}}})
	if res := run.Result(t); res.Content[0].Text != "file:///src" {
		t.Errorf("result %+v", res)
	}
}

func TestSample(t *testing.T) {
	env := mcpqtest.New(t, worker.NewTool("summarize", "", func(ctx context.Context, c *worker.Call, in struct {
		Text string `json:"text"`
	}) (string, error) {
		r, err := c.Sample(ctx, "summary", proto.CreateMessageParams{MaxTokens: 50,
			Messages: []proto.SamplingMessage{{Role: "user", Content: proto.TextContent("Summarize: " + in.Text)}}})
		if err != nil {
			return "", err
		}
		return r.Content[0].Text, nil
	}))
	for name, answer := range map[string]any{
		"one block": map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "short"}},
		"blocks":    map[string]any{"role": "assistant", "model": "m", "content": []any{map[string]any{"type": "text", "text": "short"}}},
	} {
		t.Run(name, func(t *testing.T) {
			run := env.Call(t, "summarize", map[string]any{"text": "a long story"})
			if reqs := run.Input(t); reqs["summary"].Method != proto.MethodCreateMessage {
				t.Fatalf("requests %+v", reqs)
			}
			run.Answer(t, map[string]any{"summary": answer})
			if res := run.Result(t); res.Content[0].Text != "short" {
				t.Errorf("result %+v", res)
			}
		})
	}
	run := env.Call(t, "summarize", map[string]any{"text": "x"})
	run.Input(t)
	run.Answer(t, map[string]any{"summary": "not a result"})
	if st := run.End(t); st.Status != proto.StatusFailed || st.Error.Code != proto.CodeInvalidParams {
		t.Errorf("state %+v, want failed with -32602", st)
	}
}
