package command

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/worker"
)

func TestLoadYAMLAndJSON(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	yml := `tools:
  - name: render
    title: Render
    description: Renders frames.
    inputSchema:
      type: object
      properties:
        frames: {type: integer, minimum: 1}
      required: [frames]
    command: [python3, gen.py, --frames, "{frames}"]
    dir: scripts
    env: {PYTHONUNBUFFERED: 1}
    timeout: 10m
    grace: 2s
    policy: task
    ttl: unlimited
    pollInterval: 500ms
    queue: gpu
    price: {base: 5, perArgument: {frames: 2}, max: 100}
    scopes: [render:run, gpu]
  - name: echo
    command: [cat]
`
	json := "{\n\t\"tools\": [\n\t\t{\"name\": \"render\", \"command\": [\"python3\", \"gen.py\"], \"ttl\": \"2h\"}\n\t]\n}\n"
	for name, body := range map[string]string{"tools.yaml": yml, "tools.json": json} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		tools, err := Load(p, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tools[0].Name != "render" || tools[0].Handler == nil {
			t.Fatalf("%s: %+v", name, tools[0])
		}
		if _, err := worker.New(worker.Config{Redis: nil}, tools...); err == nil || !strings.Contains(err.Error(), "Redis") {
			t.Fatalf("worker.New: %v", err) // only the missing Redis, not the tools
		}
	}
	tools, _ := Load(filepath.Join(dir, "tools.yaml"), nil)
	r := tools[0]
	if r.Title != "Render" || r.Policy != worker.PolicyTask || r.TTL != -1 || r.PollInterval != 500*time.Millisecond ||
		r.Queue != "gpu" || !strings.Contains(string(r.InputSchema), `"minimum":1`) {
		t.Fatalf("render: %+v", r)
	}
	if r.Price == nil || r.Price.Base != 5 || r.Price.PerArgument["frames"] != 2 || r.Price.Max != 100 {
		t.Fatalf("render price: %+v", r.Price)
	}
	if !slices.Equal(r.Scopes, []string{"render:run", "gpu"}) {
		t.Fatalf("render scopes: %v", r.Scopes)
	}
	if tools[1].Queue != "" || tools[1].Policy != "" || tools[1].Price != nil {
		t.Fatalf("echo: %+v", tools[1])
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"empty", ``, "empty"},
		{"not an object", `[1]`, `tools.yaml:1: the file is an object with a "tools" list`},
		{"unknown top key", "tool: []", `tools.yaml:1: unknown key "tool"`},
		{"no tools", "tools: []", `"tools" must be a list of at least one tool`},
		{"tool not an object", "tools: [3]", "tools.yaml:1: tool 1: not an object"},
		{"no name", "tools:\n  - command: [a]", "tool 1: field name: missing"},
		{"bad name", "tools:\n  - name: 'a b'\n    command: [a]", `tool "a b": field name: "a b" is not a tool name`},
		{"no command", "tools:\n  - name: a", `tools.yaml:2: tool "a": field command: missing`},
		{"command string", "tools:\n  - name: a\n    command: python3 gen.py {x}", `tool "a": field command: line 3: a list of strings, not a scalar (no shell parses it)`},
		{"embedded placeholder", "tools:\n  - name: a\n    command: [gen, '--n={n}']", `tool "a": field command: item 1 "--n={n}" embeds the placeholder {n}`},
		{"placeholder not in schema", "tools:\n  - name: a\n    inputSchema: {type: object, properties: {n: {type: integer}}}\n    command: [gen, '{m}']", `tool "a": field command: item 1: placeholder {m} names no property of inputSchema`},
		{"unknown field", "tools:\n  - name: a\n    command: [a]\n    timout: 5s", `tools.yaml:2: tool "a": line 4: unknown field "timout"`},
		{"bad duration", "tools:\n  - name: a\n    command: [a]\n    timeout: 5 minutes", `tool "a": field timeout: line 4: "5 minutes" is not a duration`},
		{"bare number duration", "tools:\n  - name: a\n    command: [a]\n    grace: 30", `tool "a": field grace: line 4: "30" is not a duration`},
		{"bad ttl", "tools:\n  - name: a\n    command: [a]\n    ttl: forever", `field ttl: line 4: "forever" is not a duration (like 30s, 5m or 2h) or "unlimited"`},
		{"bad policy", "tools:\n  - name: a\n    command: [a]\n    policy: later", `tool "a": field policy: "later" is not auto, sync or task`},
		{"missing dir", "tools:\n  - name: a\n    command: [a]\n    dir: nowhere", `tool "a": field dir: stat `},
		{"env list", "tools:\n  - name: a\n    command: [a]\n    env: [A=1]", `tool "a": field env: line 4: an object of names to strings, not a list`},
		{"env reserved", "tools:\n  - name: a\n    command: [a]\n    env: {MCPQ_OUTPUT: x}", `tool "a": field env: MCPQ_OUTPUT: names starting with MCPQ_ are mcpq's`},
		{"schema not object", "tools:\n  - name: a\n    command: [a]\n    inputSchema: {type: array}", `tool "a": field inputSchema: "type" is array`},
		{"duplicate", "tools:\n  - name: a\n    command: [a]\n  - name: a\n    command: [b]", `tools.yaml:4: tool "a": declared twice`},
		{"twice field", "tools:\n  - name: a\n    command: [a]\n    command: [b]", `tools.yaml:2: tool "a": line 4: field command given twice`},
		{"null field", "tools:\n  - name: a\n    command: [a]\n    queue:", `tool "a": field queue: line 4: a string, not a null`},
		{"price unknown field", "tools:\n  - name: a\n    command: [a]\n    price: {bas: 5}", `tool "a": field price: line 4: an object of base, perArgument and max`},
		{"price not integer", "tools:\n  - name: a\n    command: [a]\n    price: {base: 1.5}", `tool "a": field price: line 4: an object of base`},
		{"price negative", "tools:\n  - name: a\n    command: [a]\n    price: {base: -1}", `tool "a": field price: line 4: price: base and max must be 0 to`},
		{"scope with space", "tools:\n  - name: a\n    command: [a]\n    scopes: [\"a b\"]", `tool "a": field scopes: line 4: a scope is a non-empty string`},
		{"scopes not list", "tools:\n  - name: a\n    command: [a]\n    scopes: a", `tool "a": field scopes: line 4: a list of strings`},
		{"yaml syntax", "tools:\n  - name: [", `tools.yaml: yaml: line`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "tools.yaml")
			if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := Load(filepath.Join(dir, "absent.yaml"), nil); err == nil || !strings.Contains(err.Error(), "tools file: open") {
		t.Fatalf("absent file: %v", err)
	}
}

func TestNewErrorsNameTheTool(t *testing.T) {
	_, err := New(Spec{Name: "x", Command: []string{"a"}, Timeout: -time.Second})
	if err == nil || err.Error() != `command tool "x": field timeout: negative` {
		t.Fatalf("%v", err)
	}
}

// A file may hold only upstream servers (worker/upstream reads them): it
// has no command tools, and no error.
func TestLoadLeavesServersAlone(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(p, []byte("servers:\n  - {name: a, command: [x]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tools, err := Load(p, nil)
	if err != nil || len(tools) != 0 {
		t.Fatalf("Load: %v, %v", tools, err)
	}
}
