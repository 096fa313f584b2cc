package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/internal/toolpack/chaos"
	"github.com/mcpq/mcpq/proto"
)

// treePids reads the task's "attempt pid" lines: pids by attempt.
func treePids(dir, task string) map[string][]int {
	b, _ := os.ReadFile(filepath.Join(dir, task+".pids"))
	out := map[string][]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var a string
		var pid int
		if _, err := fmt.Sscanf(line, "%s %d", &a, &pid); err == nil {
			out[a] = append(out[a], pid)
		}
	}
	return out
}

// liveOf lists the pids that are still live processes (not zombies).
func liveOf(pids []int) []int {
	var live []int
	for _, p := range pids {
		if procGroup(fmt.Sprintf("/proc/%d", p)) != 0 {
			live = append(live, p)
		}
	}
	return live
}

// waitPids waits until the task's runs recorded the pids of n attempts,
// two each (the shell and its background child).
func waitPids(t *testing.T, ctx context.Context, dir, task string, n int) map[string][]int {
	t.Helper()
	for {
		byAttempt := treePids(dir, task)
		full := 0
		for _, pids := range byAttempt {
			if len(pids) == 2 {
				full++
			}
		}
		if full >= n {
			return byAttempt
		}
		if ctx.Err() != nil {
			t.Fatalf("runs of %s recorded %v, want %d attempts of 2 processes", task, byAttempt, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCommandToolTreeDiesWithItsWorker (issue 25, item 2): a worker is
// SIGKILLed while its command tool's program has a grandchild in its
// process group. The program's shell dies with the worker
// (PR_SET_PDEATHSIG); the grandchild would not. A new worker on the same
// host sweeps the dead worker's runs (worker/command/tree_linux.go)
// before it starts a program: when the task runs again, nothing of the
// old attempt is alive (as the new run itself checks first), and after a
// cancel no process of either attempt is left.
func TestCommandToolTreeDiesWithItsWorker(t *testing.T) {
	t.Parallel()
	b := redistest.Real(t)
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.yaml")
	// chaos_tree (internal/toolpack/chaos/tree.go): a shell with a
	// background child, which records, before anything else, the processes
	// of the task's earlier runs still alive (<task>.alive), then its pids.
	if err := os.WriteFile(tools, []byte(chaos.TreeTools()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix, "MCPQ_LOST_AFTER=2s", "TREE_DIR=" + dir}
	doomed := start(t, "worker A", env, nil, "worker", "--tools", tools)
	url := startFrontend(t, env)
	waitCatalog(t, url, "chaos_tree")
	ctx := within(t)
	c := taskClient(url)
	task := createTask(t, ctx, c, "chaos_tree", map[string]any{"steps": 600})
	first := waitPids(t, ctx, dir, task.TaskID, 1)
	var old []int
	for _, pids := range first {
		old = pids
	}
	doomed.kill(t)
	t.Logf("right after worker A's SIGKILL, of attempt 1's %v these live: %v (the shell gets PR_SET_PDEATHSIG, its child does not)", old, liveOf(old))

	start(t, "worker B", env, nil, "worker", "--tools", tools)
	both := waitPids(t, ctx, dir, task.TaskID, 2)
	if alive, err := os.ReadFile(filepath.Join(dir, task.TaskID+".alive")); err == nil || !os.IsNotExist(err) {
		t.Fatalf("the second run found processes of the first alive when it started (attempt pid state):\n%s(%v)", alive, err)
	}
	if live := liveOf(old); len(live) > 0 {
		t.Fatalf("attempt 1's processes %v still alive while the task runs again (runs: %v)", live, both)
	}
	cancelTask(t, ctx, c, task.TaskID)
	waitTask(t, ctx, c, task.TaskID, "cancelled", hasStatus(proto.StatusCancelled))
	var all []int
	for _, pids := range both {
		all = append(all, pids...)
	}
	for live := liveOf(all); len(live) > 0; live = liveOf(all) {
		if ctx.Err() != nil {
			t.Fatalf("processes %v of the task's runs still alive after its cancel", live)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
