package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// kill ends the process with SIGKILL, as an OOM killer or a preempted node
// would: no shutdown, no handing back of jobs.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	<-p.done
}

// TestTakeoverAfterSIGKILL: a worker killed mid-run loses its tasks to
// another worker as soon as mcpq sees its heartbeats stop (--lost-after),
// not after asynq's lease recovery (a minute and more, longer than this
// test's waits allow), and a cancel of a task the dead worker held ends it
// cancelled without waiting for any re-delivery. The workers hold each
// principal to a share of 2 running tasks, which the two tasks fill: the
// dead worker's slots must not keep the survivor from running again.
func TestTakeoverAfterSIGKILL(t *testing.T) {
	t.Parallel()
	b := redistest.Real(t)
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix, "MCPQ_LOST_AFTER=2s", "MCPQ_MAX_RUNNING_PER_PRINCIPAL=2"}
	doomed := start(t, "worker A", env, nil, "worker", "--fixtures", "conformance")
	url := startFrontend(t, env)
	waitCatalog(t, url, "slow_compute")
	ctx := within(t)
	c := taskClient(url)

	// Both run on worker A, the only one yet.
	finishing := createTask(t, ctx, c, "slow_compute", map[string]any{"seconds": 10, "label": "survivor"})
	cancelled := createTask(t, ctx, c, "slow_compute", map[string]any{"seconds": 600, "label": "cancelled"})
	for _, id := range []string{finishing.TaskID, cancelled.TaskID} {
		// "Running" when claimed, then slow_compute's "<label>: Ns of Ms"
		// from its first second on: either says worker A runs it.
		waitTask(t, ctx, c, id, "running on worker A", func(g *proto.GetTaskResult) bool {
			return strings.HasPrefix(g.StatusMessage, "Running") || strings.Contains(g.StatusMessage, "s of ")
		})
	}
	start(t, "worker B", env, nil, "worker", "--fixtures", "conformance")
	doomed.kill(t)

	if _, err := c.CancelTask(ctx, cancelled.TaskID); err != nil {
		t.Fatalf("tasks/cancel: %v", err)
	}
	g := waitTask(t, ctx, c, cancelled.TaskID, "cancelled", func(g *proto.GetTaskResult) bool {
		return g.Status == proto.StatusCancelled
	})
	if g.Status != proto.StatusCancelled {
		t.Fatalf("cancelled task ended %s", g.Status)
	}

	g = waitTask(t, ctx, c, finishing.TaskID, "completed", func(g *proto.GetTaskResult) bool {
		return g.Status == proto.StatusCompleted
	})
	if !strings.Contains(string(g.Result), "survivor") {
		t.Fatalf("result %s", g.Result)
	}
	ref := taskstate.Ref{Owner: taskstate.OwnerTag(frontend.AnonymousPrincipal), ID: finishing.TaskID}
	f, err := b.Client.HMGet(context.Background(), taskstate.Keys{Prefix: b.Prefix}.Task(ref), "lost", "resumes").Result()
	if err != nil {
		t.Fatal(err)
	}
	if f[0] != "1" || f[1] != "1" {
		t.Fatalf("lost deliveries %v, job number %v: want 1 and 1 (one takeover)", f[0], f[1])
	}
}
