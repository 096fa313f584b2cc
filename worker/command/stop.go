package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpq/mcpq/worker"
)

// envStop names the file mcpq writes why it stops the program to, just
// before it sends SIGTERM: the program's signal handler reads it to know
// whether to keep its scratch files (docs/tools.md, "Cancel or shutdown").
const envStop = "MCPQ_STOP"

// envScratch names the task's scratch folder: under the tools file's
// "scratch" folder, one per task, kept across the task's deliveries.
const envScratch = "MCPQ_SCRATCH"

// The reasons written to $MCPQ_STOP.
const (
	// StopCancel: the task was cancelled (or expired); it will not run
	// again, so scratch files go.
	StopCancel = "cancel"
	// StopTimeout: the run went over the tool's timeout; the task ends
	// with a tool error.
	StopTimeout = "timeout"
	// StopShutdown: the worker is shutting down or the task is no longer
	// this worker's; another delivery resumes it, so scratch files stay.
	StopShutdown = "shutdown"
)

// stopReason says why ctx (the task's) or rctx (the run's, with the
// tool's timeout) ended.
func stopReason(ctx, rctx context.Context) string {
	switch {
	case errors.Is(context.Cause(ctx), worker.ErrCancelled):
		return StopCancel
	case ctx.Err() == nil && rctx.Err() != nil:
		return StopTimeout
	}
	return StopShutdown
}

// writeStop writes reason to the stop file (atomically: the program may
// read it at any time); a failure is ignored, as the program then reads no
// reason, which it must treat as a shutdown (keep what it has).
func writeStop(path, reason string) {
	tmp := path + ".tmp"
	if os.WriteFile(tmp, []byte(reason+"\n"), 0o600) == nil {
		_ = os.Rename(tmp, path)
	}
}

// scratchFor is the task's scratch folder under root (created), or "" when
// the tool has none.
func scratchFor(root, taskID string) (string, error) {
	if root == "" {
		return "", nil
	}
	if !inputKey.MatchString(taskID) {
		return "", fmt.Errorf("task id %q cannot name a folder", taskID)
	}
	dir := filepath.Join(root, taskID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("cannot make the scratch folder: %w", err)
	}
	return dir, nil
}

// keepScratch says whether the task's scratch folder outlives this run:
// yes when the task will be delivered again (the worker shut down, the
// task moved on, it waits for input, the task store was unreachable); no
// when the task ends here (a result, a tool error, a cancel).
func keepScratch(ctx context.Context, err error) bool {
	if errors.Is(context.Cause(ctx), worker.ErrCancelled) || errors.Is(err, worker.ErrCancelled) {
		return false
	}
	if ctx.Err() != nil {
		return true
	}
	return err != nil && worker.Redelivered(err)
}
