package main

import (
	"os"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/mcpqtest"
)

func TestLookup(t *testing.T) {
	env := mcpqtest.New(t, lookup) // a real worker on an embedded Redis
	res := env.Call(t, "lookup", Host{Name: "127.0.0.1"}).Result(t)
	if got := res.Content[0].Text; res.IsError || got != `["127.0.0.1"]` {
		t.Errorf("lookup answered %q (isError %v)", got, res.IsError)
	}
}

// An empty name breaks the schema's minLength: every front end answers a
// tool error naming the argument, and no task is made.
func TestLookupRefusesAnEmptyName(t *testing.T) {
	env := mcpqtest.New(t, lookup)
	run := env.Call(t, "lookup", Host{})
	res := run.Result(t)
	if !res.IsError || !strings.Contains(res.Content[0].Text, `"name"`) || run.TaskID() != "" {
		t.Errorf("result %+v, task %q: want a tool error naming the argument and no task", res, run.TaskID())
	}
}

// The README shows this worker and its test: they must be these files.
func TestREADMEShowsThisWorker(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(src)+"```\n") {
		t.Error("README.md does not show examples/hello/main.go as it is, in one go block")
	}
	test, err := os.ReadFile("main_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, fn, ok := strings.Cut(string(test), "\nfunc TestLookup(")
	fn, _, _ = strings.Cut(fn, "\n}\n")
	if !ok || !strings.Contains(string(readme), "```go\nfunc TestLookup("+fn+"\n}\n```\n") {
		t.Error("README.md does not show TestLookup of examples/hello/main_test.go as it is")
	}
}
