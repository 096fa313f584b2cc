package command

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/mcpqtest"
)

const durationSchema = `{"type":"object","properties":{"duration":{"type":"number"},"codec":{"type":"string"}},"required":["duration","codec"]}`

// TestStructuredContent: what the program writes to $MCPQ_STRUCTURED is
// the result's structuredContent; with an outputSchema declared it must
// be there and match, else the run is a tool error saying why.
func TestStructuredContent(t *testing.T) {
	spec := func(name, script string) Spec {
		s := sh(name, script)
		s.OutputSchema = json.RawMessage(durationSchema)
		return s
	}
	env := mcpqtest.New(t,
		mustNew(t, spec("good", `printf '{"duration": 20.0, "codec": "h264"}' > "$MCPQ_STRUCTURED"; echo encoded`)),
		mustNew(t, spec("missing", `echo encoded`)),
		mustNew(t, spec("wrong", `printf '{"duration": "long", "codec": "h264"}' > "$MCPQ_STRUCTURED"`)),
		mustNew(t, sh("notobject", `printf '[1,2]' > "$MCPQ_STRUCTURED"`)),
		mustNew(t, sh("free", `printf '{"any": true}' > "$MCPQ_STRUCTURED"`)),
	)
	res := env.Call(t, "good", map[string]any{}).Result(t)
	if res.IsError || string(res.StructuredContent) != `{"duration":20.0,"codec":"h264"}` || res.Content[0].Text != "encoded\n" {
		t.Fatalf("good: %+v structured %s", res, res.StructuredContent)
	}
	for name, want := range map[string]string{
		"missing":   "declares an outputSchema but the program wrote no structured result",
		"wrong":     "does not match the tool's outputSchema",
		"notobject": "does not hold a JSON object",
	} {
		res := env.Call(t, name, map[string]any{}).Result(t)
		if !res.IsError || len(res.StructuredContent) != 0 || !strings.Contains(res.Content[0].Text, want) {
			t.Errorf("%s: %+v, want a tool error with %q", name, res, want)
		}
	}
	if res := env.Call(t, "free", map[string]any{}).Result(t); res.IsError || string(res.StructuredContent) != `{"any":true}` {
		t.Errorf("free: %+v", res)
	}
	if _, err := New(Spec{Name: "x", Command: []string{"cat"}, OutputSchema: json.RawMessage(`{"type":"array"}`)}); err == nil ||
		!strings.Contains(err.Error(), `field outputSchema: "type" must be "object"`) {
		t.Errorf("array outputSchema: %v", err)
	}
}

// TestCheckpointOverTheLimit: a checkpoint line over
// worker.MaxCheckpointBytes ends the run with an error saying so, rather
// than being cut or dropped in silence.
func TestCheckpointOverTheLimit(t *testing.T) {
	script := `python3 -c 'import json,sys; print(json.dumps({"checkpoint": {"data": "x" * (2 << 20)}}))' >&3; sleep 300`
	res := mcpqtest.New(t, mustNew(t, sh("bigcp", script))).Call(t, "bigcp", map[string]any{}).Result(t)
	if !res.IsError || !strings.Contains(res.Content[0].Text, "over the 1048576-byte limit (worker.MaxCheckpointBytes)") {
		t.Fatalf("result %+v", res)
	}
}
