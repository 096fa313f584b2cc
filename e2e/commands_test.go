package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// toolsFile is the example tools file the command-tool tests serve.
const toolsFile = "../examples/commands/tools.yaml"

// needPython skips when python3 is missing, unless the run requires
// everything (scripts/test installs python3 and sets MCPQ_REQUIRE_REAL_REDIS).
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("MCPQ_REQUIRE_REAL_REDIS") == "1" {
			t.Fatal("python3 is required for the command-tool tests")
		}
		t.Skip("python3 not installed")
	}
}

// toolResult decodes a completed task's result.
func toolResult(t *testing.T, g *proto.GetTaskResult) *proto.CallToolResult {
	t.Helper()
	var r proto.CallToolResult
	if err := json.Unmarshal(g.Result, &r); err != nil {
		t.Fatalf("result %s: %v", g.Result, err)
	}
	return &r
}

// processGroupOf finds the live process whose command line holds marker
// and returns its process group.
func processGroupOf(t *testing.T, marker string) int {
	t.Helper()
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		if g := procGroup(filepath.Dir(p)); g > 0 {
			return g
		}
	}
	t.Fatalf("no process runs with %q in its command line", marker)
	return 0
}

// procGroup is the process group of /proc/PID (0 when it ended or is a zombie).
func procGroup(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
		return 0
	}
	g, _ := strconv.Atoi(f[2])
	return g
}

// groupAlive lists the live processes of group pgid.
func groupAlive(pgid int) []string {
	var live []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if procGroup(d) == pgid {
			live = append(live, filepath.Base(d))
		}
	}
	return live
}

// TestCommandTools runs `mcpq worker --tools examples/commands/tools.yaml`
// and a front end as processes on a real redis-server: a command tool's
// progress is the task's statusMessage, its PNG comes back as image
// content, a cancel ends the task cancelled and leaves no process of the
// program's group, and a crash is a tool error with the stderr tail.
func TestCommandTools(t *testing.T) {
	t.Parallel()
	needPython(t)
	b := redistest.Real(t)
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix}
	start(t, "worker", env, nil, "worker", "--tools", toolsFile, "--concurrency", "4")
	url := startFrontend(t, env)
	waitCatalog(t, url, "render_image")

	t.Run("progress and image", func(t *testing.T) {
		t.Parallel()
		ctx := within(t)
		c := taskClient(url)
		task := createTask(t, ctx, c, "render_image", map[string]any{"prompt": "--a fox; rm -rf / $(id)", "frames": 6, "size": 32, "delay": 0.3})
		waitTask(t, ctx, c, task.TaskID, "per-frame progress", func(g *proto.GetTaskResult) bool {
			return strings.HasPrefix(g.StatusMessage, "frame ") && strings.HasSuffix(g.StatusMessage, "/6")
		})
		g := waitTask(t, ctx, c, task.TaskID, "completed", hasStatus(proto.StatusCompleted))
		r := toolResult(t, g)
		if r.IsError || len(r.Content) != 2 {
			t.Fatalf("result %s", g.Result)
		}
		if r.Content[0].Type != "text" || r.Content[0].Text != "--a fox; rm -rf / $(id) (6 frames, 32x32)" {
			t.Fatalf("caption %+v: the prompt did not arrive as one argv item", r.Content[0])
		}
		img := r.Content[1]
		data, err := base64.StdEncoding.DecodeString(img.Data)
		if err != nil || img.Type != "image" || img.MimeType != "image/png" {
			t.Fatalf("image block %+v: %v", img, err)
		}
		pic, err := png.Decode(bytes.NewReader(data))
		if err != nil || pic.Bounds().Dx() != 32 || pic.Bounds().Dy() != 32 {
			t.Fatalf("PNG: %v, bounds %v", err, pic)
		}
	})

	t.Run("cancel stops the program's group", func(t *testing.T) {
		t.Parallel()
		ctx := within(t)
		c := taskClient(url)
		marker := fmt.Sprintf("cancel-me-%d", time.Now().UnixNano())
		task := createTask(t, ctx, c, "render_image", map[string]any{"prompt": marker, "frames": 1000, "delay": 0.2})
		waitTask(t, ctx, c, task.TaskID, "a frame done", func(g *proto.GetTaskResult) bool {
			return strings.HasPrefix(g.StatusMessage, "frame ")
		})
		pgid := processGroupOf(t, marker)
		cancelTask(t, ctx, c, task.TaskID)
		acked := time.Now()
		waitTask(t, ctx, c, task.TaskID, "cancelled", hasStatus(proto.StatusCancelled))
		for live := groupAlive(pgid); len(live) > 0; live = groupAlive(pgid) {
			if ctx.Err() != nil {
				t.Fatalf("processes %v of the program's group %d still alive", live, pgid)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Informational: the bound is tools.yaml's grace (3s); the test's
		// pass does not hang on the machine's speed.
		t.Logf("program group gone %v after the cancel was acknowledged", time.Since(acked))
	})

	t.Run("crash is a tool error with the stderr tail", func(t *testing.T) {
		t.Parallel()
		ctx := within(t)
		c := taskClient(url)
		task := createTask(t, ctx, c, "render_image", map[string]any{"prompt": "doomed", "frames": 5, "delay": 0, "fail_at_frame": 2})
		g := waitTask(t, ctx, c, task.TaskID, "completed", hasStatus(proto.StatusCompleted))
		r := toolResult(t, g)
		if !r.IsError || len(r.Content) == 0 {
			t.Fatalf("result %s, want isError", g.Result)
		}
		text := r.Content[0].Text
		for _, want := range []string{"render_image: the program failed (exit status 1)", "Traceback",
			"RuntimeError: the model failed at frame 2 (fail_at_frame)"} {
			if !strings.Contains(text, want) {
				t.Fatalf("tool error %q lacks %q", text, want)
			}
		}
	})
}

// TestCommandToolTakeover: the worker running a command tool is killed with
// SIGKILL mid-batch; another worker takes the task over (MCPQ_LOST_AFTER=2s)
// with the checkpoint the program wrote, and the batch completes once,
// every input processed exactly once.
func TestCommandToolTakeover(t *testing.T) {
	t.Parallel()
	needPython(t)
	b := redistest.Real(t)
	results := t.TempDir()
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix, "MCPQ_LOST_AFTER=2s", "BATCH_RESULTS_DIR=" + results}
	doomed := start(t, "worker A", env, nil, "worker", "--tools", toolsFile)
	url := startFrontend(t, env)
	waitCatalog(t, url, "batch_digest")
	ctx := within(t)
	c := taskClient(url)
	items := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	task := createTask(t, ctx, c, "batch_digest", map[string]any{"items": items, "delay": 0.4})
	waitTask(t, ctx, c, task.TaskID, "two items done on worker A", func(g *proto.GetTaskResult) bool {
		var n int
		_, err := fmt.Sscanf(g.StatusMessage, "item %d/", &n)
		return err == nil && n >= 2
	})
	start(t, "worker B", env, nil, "worker", "--tools", toolsFile)
	doomed.kill(t)

	g := waitTask(t, ctx, c, task.TaskID, "completed", hasStatus(proto.StatusCompleted))
	r := toolResult(t, g)
	if r.IsError || len(r.Content) != 1 {
		t.Fatalf("result %s", g.Result)
	}
	var out struct {
		Results []struct {
			Item    string `json:"item"`
			Attempt string `json:"attempt"`
		} `json:"results"`
		ResumedFrom int `json:"resumed_from"`
	}
	if err := json.Unmarshal([]byte(r.Content[0].Text), &out); err != nil {
		t.Fatalf("batch output %q: %v", r.Content[0].Text, err)
	}
	if out.ResumedFrom < 2 || len(out.Results) != len(items) {
		t.Fatalf("resumed from %d with %d results, want at least 2 and %d", out.ResumedFrom, len(out.Results), len(items))
	}
	for i, res := range out.Results {
		if res.Item != items[i] {
			t.Fatalf("result %d is for %q, want %q", i, res.Item, items[i])
		}
	}
	if first, last := out.Results[0].Attempt, out.Results[len(items)-1].Attempt; first == last {
		t.Fatalf("first and last items both done by attempt %s: no takeover happened", first)
	}
	// The program's own log of results, appended by both deliveries, holds
	// every item, and at most the one in flight when worker A died twice
	// (written to the log before its checkpoint reached the task): a
	// checkpoint makes a re-delivery skip what was done, not exactly-once.
	log, err := os.ReadFile(filepath.Join(results, task.TaskID+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var res struct{ Item string }
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			t.Fatalf("results log line %q: %v", line, err)
		}
		seen[res.Item]++
	}
	twice := 0
	for _, it := range items {
		if seen[it] == 0 || seen[it] > 2 {
			t.Fatalf("item %q processed %d times:\n%s", it, seen[it], log)
		}
		if seen[it] == 2 {
			twice++
		}
	}
	if twice > 1 || len(seen) != len(items) {
		t.Fatalf("results log:\n%s", log)
	}
	ref := taskstate.Ref{Owner: taskstate.OwnerTag(frontend.AnonymousPrincipal), ID: task.TaskID}
	f, err := b.Client.HMGet(context.Background(), taskstate.Keys{Prefix: b.Prefix}.Task(ref), "lost", "resumes").Result()
	if err != nil {
		t.Fatal(err)
	}
	if f[0] != "1" || f[1] != "1" {
		t.Fatalf("lost deliveries %v, job number %v: want 1 and 1 (one takeover)", f[0], f[1])
	}
}

// TestCommandToolWorkerStop: a worker stopped with SIGTERM while a command
// tool runs exits cleanly, stops the program (no process of its group is
// left) and hands the job back without ending the task: another worker
// runs it again.
func TestCommandToolWorkerStop(t *testing.T) {
	t.Parallel()
	needPython(t)
	b := redistest.Real(t)
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix}
	stopped := start(t, "worker A", env, nil, "worker", "--tools", toolsFile)
	url := startFrontend(t, env)
	waitCatalog(t, url, "render_image")
	ctx := within(t)
	c := taskClient(url)
	marker := fmt.Sprintf("handed-back-%d", time.Now().UnixNano())
	task := createTask(t, ctx, c, "render_image", map[string]any{"prompt": marker, "frames": 1000, "delay": 0.1})
	waitTask(t, ctx, c, task.TaskID, "a frame done on worker A", func(g *proto.GetTaskResult) bool {
		return strings.HasPrefix(g.StatusMessage, "frame ")
	})
	pgid := processGroupOf(t, marker)
	stopped.stop(t) // SIGTERM; fails the test unless it exits 0
	if live := groupAlive(pgid); len(live) > 0 {
		t.Fatalf("worker A exited leaving processes %v of the program's group %d", live, pgid)
	}
	if g, err := c.GetTask(ctx, task.TaskID); err != nil || g.Status != proto.StatusWorking {
		t.Fatalf("after the worker stopped: %+v, %v; want the task still working", g, err)
	}
	start(t, "worker B", env, nil, "worker", "--tools", toolsFile)
	waitTask(t, ctx, c, task.TaskID, "worker B running the program", func(g *proto.GetTaskResult) bool {
		for _, d := range mustGlob("/proc/[0-9]*/cmdline") {
			if b, err := os.ReadFile(d); err == nil && bytes.Contains(b, []byte(marker)) && procGroup(filepath.Dir(d)) != 0 {
				return true
			}
		}
		return false
	})
	cancelTask(t, ctx, c, task.TaskID)
	waitTask(t, ctx, c, task.TaskID, "cancelled", hasStatus(proto.StatusCancelled))
}

func mustGlob(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	return m
}
