package upstream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/proto"
)

// TestUpstreamTaskFollowedAcrossALostWorker: a tool the upstream runs as
// its own task (taskSupport required) is called once; its statusMessage
// becomes the mcpq task's; the worker is lost while it follows the
// upstream task, and the next delivery follows the same upstream task id
// (from the checkpoint) instead of calling again.
func TestUpstreamTaskFollowedAcrossALostWorker(t *testing.T) {
	spec := fakeSpec(t, "legacy")
	rec := filepath.Join(t.TempDir(), "notes")
	spec.Env[recordEnv] = rec
	_, _, env := serve(t, spec)
	until := filepath.Join(t.TempDir(), "done")
	run := env.Call(t, "study", map[string]any{"until": until})
	run.WaitMessage(t, "researching (task T1)")
	run.Redeliver(t)
	run.WaitMessage(t, "researching (task T1)")
	if err := os.WriteFile(until, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	res := run.Result(t)
	if len(res.Content) != 1 || res.Content[0].Text != "report of task T1" {
		t.Fatalf("result %+v, want the report of the first upstream task", res)
	}
	if d := run.Deliveries(); len(d) != 2 {
		t.Errorf("deliveries %v, want 2 (the lost one and its takeover)", d)
	}
	b, _ := os.ReadFile(rec)
	if n := strings.Count(string(b), `"method":"tools/call"`); n != 1 {
		t.Errorf("tools/call sent %d times, want once: the takeover follows the upstream task\n%s", n, b)
	}
}

// TestUpstreamTaskCancelled: tasks/cancel of the mcpq task is passed
// upstream as tasks/cancel of the upstream task, and the task ends cancelled.
func TestUpstreamTaskCancelled(t *testing.T) {
	spec := fakeSpec(t, "legacy")
	rec := filepath.Join(t.TempDir(), "notes")
	spec.Env[recordEnv] = rec
	_, _, env := serve(t, spec)
	run := env.Call(t, "study", map[string]any{"until": filepath.Join(t.TempDir(), "never")})
	run.WaitMessage(t, "researching (task T1)")
	run.Cancel(t)
	if st := run.End(t); st.Status != proto.StatusCancelled {
		t.Fatalf("ended %s (%s)", st.Status, st.StatusMessage)
	}
	waitFile(t, rec, `"method":"tasks/cancel","params":{"taskId":"T1"}`)
}
