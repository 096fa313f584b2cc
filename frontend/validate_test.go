package frontend_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// strictSchema is the inputSchema of toolStrict, shaped as worker.NewTool
// infers them (required fields, no other properties) plus bounds and enums.
const strictSchema = `{"type":"object","additionalProperties":false,"required":["seconds","region"],
"properties":{"seconds":{"type":"integer","minimum":1,"maximum":60},
"region":{"type":"string","enum":["eu","us"]},
"limits":{"type":"object","additionalProperties":false,"required":["max"],"properties":{"max":{"type":"number"}}},
"tags":{"type":"array","items":{"type":"string"}}}}`

const toolStrict = "strict_job" // task policy, held

// TestInvalidArgumentsNoTask: arguments that break the tool's inputSchema
// are answered as a tool execution error naming the failing argument, and
// leave no task record and no job behind; valid ones make a task.
func TestInvalidArgumentsNoTask(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, nil)
		e.publish(catalog.Entry{Tool: proto.Tool{Name: toolStrict,
			InputSchema: json.RawMessage(strictSchema)}, Policy: proto.PolicyTask, Queue: "mcpq"})
		cases := []struct {
			name string
			args map[string]any
			want []string // in the error text
		}{
			{"no arguments", nil, []string{"missing properties", "region", "seconds"}},
			{"missing required", map[string]any{"seconds": 5}, []string{"missing properties", `"region"`}},
			{"below minimum", map[string]any{"seconds": 0, "region": "eu"}, []string{`argument "seconds"`, "minimum", "less than 1"}},
			{"wrong type", map[string]any{"seconds": "soon", "region": "eu"}, []string{`argument "seconds"`, `want "integer"`}},
			{"not an integer", map[string]any{"seconds": 1.5, "region": "eu"}, []string{`argument "seconds"`, `want "integer"`}},
			{"not in enum", map[string]any{"seconds": 5, "region": "mars"}, []string{`argument "region"`, "enum"}},
			{"unknown property", map[string]any{"seconds": 5, "region": "eu", "speed": 9}, []string{"additional properties", `"speed"`}},
			{"nested", map[string]any{"seconds": 5, "region": "eu", "limits": map[string]any{}}, []string{`argument "limits"`, `"max"`}},
			{"array item", map[string]any{"seconds": 5, "region": "eu", "tags": []any{"a", 2}}, []string{`argument "tags"`, `want "string"`}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := e.with(t)
				before := keysOf(t, b)
				for _, meta := range []string{metaTasks, metaPlain} {
					rep := e.callTool(meta, toolStrict, tc.args)
					mustMatch(t, rep, 200, `{"result":{"resultType":"complete","isError":true}}`)
					text := ""
					if c, ok := lookup(rep.JSON, "result.content"); ok {
						if blocks, _ := c.([]any); len(blocks) == 1 {
							text, _ = blocks[0].(map[string]any)["text"].(string)
						}
					}
					if !strings.HasPrefix(text, "Invalid arguments for tool "+toolStrict+": ") {
						t.Fatalf("error text %q", text)
					}
					for _, w := range tc.want {
						if !strings.Contains(text, w) {
							t.Errorf("error text %q lacks %q", text, w)
						}
					}
				}
				if after := keysOf(t, b); !slices.Equal(before, after) {
					t.Errorf("Redis keys changed: before %v, after %v", before, after)
				}
				select {
				case j := <-e.enq.jobs:
					t.Errorf("a job was enqueued: %+v", j)
				default:
				}
			})
		}
		t.Run("valid arguments make a task", func(t *testing.T) {
			e := e.with(t)
			rep := e.callTool(metaTasks, toolStrict, map[string]any{"seconds": 60, "region": "us",
				"limits": map[string]any{"max": 2.5}, "tags": []any{"x"}})
			mustMatch(t, rep, 200, `{"result":{"resultType":"task","taskId":"<taskid>"}}`)
			if j := e.enq.nextJob(t); j.Ref.ID != str(rep.JSON, "result.taskId") {
				t.Errorf("job of %s, want the new task", j.Ref.ID)
			}
		})
	})
}

// keysOf lists the test's keys (its prefix) and asynq's, sorted.
func keysOf(t *testing.T, b *redistest.Backend) []string {
	t.Helper()
	var out []string
	// This test's keys and its asynq queues' (asynq keys carry no prefix;
	// the queue name does), on every node of a cluster: other tests share
	// the server.
	for _, pattern := range []string{b.Prefix + "*", "asynq:{" + b.Prefix + "*"} {
		keys, err := b.Keys(context.Background(), pattern)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, keys...)
	}
	slices.Sort(out)
	return out
}
