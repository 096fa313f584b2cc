package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Task ids may start with '-': only the client flags are flags.
func TestParseClientArgs(t *testing.T) {
	t.Setenv("MCPQ_URL", "http://example.test:9000")
	t.Setenv("MCPQ_API_KEY", "envkey")
	t.Setenv("MCPQ_JOURNAL", "/tmp/j")
	for _, tc := range []struct {
		args   []string
		want   []string
		server string
		key    string
		detach bool
	}{
		{[]string{"get", "-Ab3_x"}, []string{"get", "-Ab3_x"}, "http://example.test:9000/mcp", "envkey", false},
		{[]string{"get", "--", "--key"}, []string{"get", "--key"}, "http://example.test:9000/mcp", "envkey", false},
		{[]string{"--server", "http://h/x/mcp", "watch", "-x", "--key=k2"}, []string{"watch", "-x"}, "http://h/x/mcp", "k2", false},
		{[]string{"render_gif", "frames=40", "--detach", "-size=16"}, []string{"render_gif", "frames=40", "-size=16"}, "http://example.test:9000/mcp", "envkey", true},
	} {
		o, err := parseClientArgs(tc.args)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if !reflect.DeepEqual(o.args, tc.want) || o.server != tc.server || o.key != tc.key || o.detach != tc.detach {
			t.Errorf("%q: args %q server %q key %q detach %v", tc.args, o.args, o.server, o.key, o.detach)
		}
	}
	o, err := parseClientArgs([]string{"ls", "--status", "working", "--limit=5"})
	if err != nil || !reflect.DeepEqual(o.args, []string{"ls"}) || o.status != "working" || o.limit != "5" || o.notListing() == nil {
		t.Errorf("task ls flags: %+v %v", o, err)
	}
	if _, err := parseClientArgs([]string{"--server"}); err == nil {
		t.Error("--server without a value accepted")
	}
}

func TestToolArgs(t *testing.T) {
	schema := json.RawMessage(`{"properties":{"name":{"type":"string"},"frames":{"type":"integer"}}}`)
	got, err := toolArgs(schema, `{"size":16,"name":"x"}`, []string{"frames=40", "name=007", "flag=true", "label=hello world"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"size": float64(16), "frames": float64(40), "name": "007", "flag": true, "label": "hello world"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("toolArgs = %v, want %v", got, want)
	}
	if _, err := toolArgs(schema, "", []string{"novalue"}); err == nil {
		t.Error("a pair without = accepted")
	}
}
