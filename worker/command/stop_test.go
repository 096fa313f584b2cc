package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/proto"
)

// stopScript starts a unit of work in $MCPQ_SCRATCH and, stopped, copies
// $MCPQ_STOP to $REASONS/<task id> (outside the scratch folder, which a
// cancel removes). A run that finds the unit in its scratch says so and
// ends.
const stopScript = `trap 'cp "$MCPQ_STOP" "$REASONS/$MCPQ_TASK_ID"; exit 143' TERM
if [ -f "$MCPQ_SCRATCH/part" ]; then
  printf 'resumed with %s' "$(cat "$MCPQ_SCRATCH/part")"; exit 0
fi
echo segment-1 > "$MCPQ_SCRATCH/part"
echo '{"status":"working"}' >&3
sleep 300 & wait`

func stopSpec(t *testing.T) (Spec, string, string) {
	scratch, reasons := t.TempDir(), t.TempDir()
	s := sh("stoppable", stopScript)
	s.Scratch = scratch
	s.Env = map[string]string{"REASONS": reasons}
	return s, scratch, reasons
}

// TestShutdownKeepsScratch: a worker lost mid-run stops the program with
// reason "shutdown"; the scratch folder stays, so the next delivery
// resumes from it, and it is removed once the task completes.
func TestShutdownKeepsScratch(t *testing.T) {
	s, scratch, reasons := stopSpec(t)
	run := env2(t, s).Call(t, "stoppable", map[string]any{})
	run.WaitMessage(t, "working")
	run.Redeliver(t)
	res := run.Result(t)
	if res.IsError || res.Content[0].Text != "resumed with segment-1" {
		t.Fatalf("result %+v", res)
	}
	// The lost run's trap may still be writing: wait for it.
	var reason string
	run.WaitFor(t, "the lost run's stop reason", func(mcpqtest.State) bool {
		b, _ := os.ReadFile(filepath.Join(reasons, run.TaskID()))
		reason = strings.TrimSpace(string(b))
		return reason != ""
	})
	if reason != StopShutdown {
		t.Errorf("$MCPQ_STOP = %q, want %q", reason, StopShutdown)
	}
	if _, err := os.Stat(filepath.Join(scratch, run.TaskID())); !os.IsNotExist(err) {
		t.Errorf("scratch folder of a completed task: %v, want removed", err)
	}
}

// TestCancelRemovesScratch: a cancel stops the program with reason
// "cancel" and removes the task's scratch folder.
func TestCancelRemovesScratch(t *testing.T) {
	s, scratch, reasons := stopSpec(t)
	run := env2(t, s).Call(t, "stoppable", map[string]any{})
	run.WaitMessage(t, "working")
	if _, err := os.Stat(filepath.Join(scratch, run.TaskID(), "part")); err != nil {
		t.Fatalf("scratch file while running: %v", err)
	}
	run.Cancel(t)
	if st := run.End(t); st.Status != proto.StatusCancelled {
		t.Fatalf("status %s", st.Status)
	}
	if b, _ := os.ReadFile(filepath.Join(reasons, run.TaskID())); strings.TrimSpace(string(b)) != StopCancel {
		t.Errorf("$MCPQ_STOP = %q, want %q", b, StopCancel)
	}
	if _, err := os.Stat(filepath.Join(scratch, run.TaskID())); !os.IsNotExist(err) {
		t.Errorf("scratch folder of a cancelled task: %v, want removed", err)
	}
}
