package command

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/mcpq/mcpq/worker"
)

// helperEnv switches the test binary into a helper program: the tests run
// it as a command tool's program (no shell, no interpreter needed).
const helperEnv = "COMMAND_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		slog.SetDefault(slog.New(slog.DiscardHandler))
		os.Exit(m.Run())
	case "argv": // prints its arguments as a JSON list
		b, _ := json.Marshal(os.Args[1:])
		os.Stdout.Write(b)
		os.Exit(0)
	case "env": // prints the named variables as a JSON object (unset: null)
		out := map[string]*string{}
		for _, k := range os.Args[1:] {
			if v, ok := os.LookupEnv(k); ok {
				out[k] = &v
			}
		}
		b, _ := json.Marshal(out)
		os.Stdout.Write(b)
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
}

// self is the test binary, for helper programs.
func self(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mustNew is New for specs a test knows to be valid.
func mustNew(t *testing.T, s Spec) worker.Tool {
	t.Helper()
	tool, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}
