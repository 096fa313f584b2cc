package main

import (
	"flag"
	"io"
	"testing"

	"github.com/mcpq/mcpq/worker"
)

// TestToolsFlag: --tools takes a comma-separated list and may be repeated;
// the first use replaces MCPQ_TOOLS.
func TestToolsFlag(t *testing.T) {
	t.Setenv("MCPQ_TOOLS", "env.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "env.yaml"},
		{[]string{"--tools", "a.yaml,b.yaml"}, "a.yaml,b.yaml"},
		{[]string{"--tools", "a.yaml", "--tools", "b.yaml,c.yaml"}, "a.yaml,b.yaml,c.yaml"},
	} {
		fs := flag.NewFlagSet("worker", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var cfg worker.Config
		var fixtures, tools string
		workerFlags(fs, &cfg, &fixtures, &tools)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if tools != c.want {
			t.Errorf("%v: tools = %q, want %q", c.args, tools, c.want)
		}
	}
}
