package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/proto"
)

// stopScript starts a unit of work in $MCPQ_SCRATCH and, stopped, copies
// $MCPQ_STOP to $REASONS/<task id> (outside the scratch folder, which a
// cancel removes) and into the scratch folder. A run that finds the
// reason of the previous one in its scratch says so and ends.
const stopScript = `trap 'cp "$MCPQ_STOP" "$REASONS/$MCPQ_TASK_ID"; cp "$MCPQ_STOP" "$MCPQ_SCRATCH/reason"; exit 143' TERM
if [ -f "$MCPQ_SCRATCH/part" ]; then
  while [ ! -f "$MCPQ_SCRATCH/reason" ]; do sleep 0.05; done
  printf 'resumed with %s after %s' "$(cat "$MCPQ_SCRATCH/part")" "$(cat "$MCPQ_SCRATCH/reason")"; exit 0
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
	if res.IsError || res.Content[0].Text != "resumed with segment-1 after shutdown" {
		t.Fatalf("result %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(reasons, run.TaskID())); strings.TrimSpace(string(b)) != StopShutdown {
		t.Errorf("$MCPQ_STOP = %q, want %q", b, StopShutdown)
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
