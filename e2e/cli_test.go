package e2e

import (
	"bufio"
	"context"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// cliProc is a running client command of mcpq (call, task, resume) with its
// own stdin, and its stdout and stderr kept apart.
type cliProc struct {
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	mu             sync.Mutex
	stdout, stderr strings.Builder
	done           chan struct{}
}

// startCLI runs mcpq args; onErrLine sees each stderr line.
func startCLI(t *testing.T, ctx context.Context, onErrLine func(string), args ...string) *cliProc {
	t.Helper()
	p := &cliProc{cmd: exec.CommandContext(ctx, mcpqBin, args...), done: make(chan struct{})}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	outR, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	read := func(r io.Reader, b *strings.Builder, onLine func(string)) {
		defer wg.Done()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.mu.Lock()
			b.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if onLine != nil {
				onLine(sc.Text())
			}
		}
	}
	wg.Add(2)
	go read(outR, &p.stdout, nil)
	go read(errR, &p.stderr, onErrLine)
	go func() { wg.Wait(); close(p.done) }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

// wait waits for the command to exit and returns its error.
func (p *cliProc) wait() error {
	<-p.done
	return p.cmd.Wait()
}

func (p *cliProc) output() (string, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String(), p.stderr.String()
}

// The CLI is killed with SIGKILL while three tasks run, one of them waiting
// for an answer at the terminal; mcpq resume re-attaches to all three from
// the journal, asks for the pending input exactly once, and prints every
// result.
func TestCLIResumeAfterSIGKILL(t *testing.T) {
	url := startDev(t)
	ctx := within(t)
	journal, out := t.TempDir(), t.TempDir()
	flags := []string{"--server", url, "--journal", journal, "--out", out}

	ready := make(chan string, 3)
	signalOn := func(prefix string) func(string) {
		var once sync.Once
		return func(line string) {
			if strings.HasPrefix(line, prefix) {
				once.Do(func() { ready <- line })
			}
		}
	}
	calls := []*cliProc{
		startCLI(t, ctx, signalOn("task "), append([]string{"call", "slow_compute", "seconds=4", "label=slow"}, flags...)...),
		startCLI(t, ctx, signalOn("task "), append([]string{"call", "render_gif", "frames=30", "frameMs=100", "size=32"}, flags...)...),
		// Its task asks for confirmation: the CLI shows the question and waits.
		startCLI(t, ctx, signalOn("? Delete notes.txt?"), append([]string{"call", "confirm_delete", "filename=notes.txt"}, flags...)...),
	}
	for range calls {
		select {
		case <-ready:
		case <-ctx.Done():
			for _, p := range calls {
				_, e := p.output()
				t.Logf("stderr: %s", e)
			}
			t.Fatal("the three calls did not all start")
		}
	}
	for _, p := range calls {
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := p.wait(); err == nil {
			t.Fatal("a killed call exited cleanly")
		}
	}
	j := &client.FileJournal{Dir: journal}
	entries, err := j.List(ctx)
	if err != nil || len(entries) != 3 {
		t.Fatalf("journal after the kill: %d entries, %v", len(entries), err)
	}

	resume := startCLI(t, ctx, nil, append([]string{"resume"}, flags...)...)
	// The answers to the one form: answer it, confirm yes.
	if _, err := io.WriteString(resume.stdin, "a\ny\n"); err != nil {
		t.Fatal(err)
	}
	err = resume.wait()
	stdout, stderr := resume.output()
	if err != nil {
		t.Fatalf("mcpq resume: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if n := strings.Count(stderr, "? Delete notes.txt?"); n != 1 {
		t.Errorf("the pending question was asked %d times, want once:\n%s", n, stderr)
	}
	for _, want := range []string{"Deleted notes.txt", `Computed "slow" in 4s`, "Rendered 30 frames"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("resume printed no %q:\n%s\nstderr:\n%s", want, stdout, stderr)
		}
	}
	gifs, _ := filepath.Glob(filepath.Join(out, "render_gif-*.gif"))
	if len(gifs) != 1 {
		t.Errorf("saved GIFs: %v", gifs)
	} else if b, err := os.ReadFile(gifs[0]); err != nil || !strings.HasPrefix(string(b), "GIF89a") {
		t.Errorf("%s is not a GIF (%v)", gifs[0], err)
	}
	if left, _ := j.List(ctx); len(left) != 0 {
		t.Errorf("journal keeps %d entries after their results were printed", len(left))
	}
	// Nothing is left to resume.
	again := startCLI(t, ctx, nil, append([]string{"resume"}, flags...)...)
	if err := again.wait(); err != nil {
		t.Fatal(err)
	}
	if _, e := again.output(); !strings.Contains(e, "no tasks to resume") {
		t.Errorf("second resume: %s", e)
	}
}

// An id starting with '-' is an id, not a flag, in every task command.
func TestCLIDashID(t *testing.T) {
	url := startDev(t)
	ctx := within(t)
	for _, verb := range []string{"get", "watch", "cancel", "answer"} {
		p := startCLI(t, ctx, nil, "task", verb, "-AAAAAAAAAAAAAAAAAAAAA", "--server", url, "--journal", t.TempDir())
		err := p.wait()
		_, stderr := p.output()
		if err == nil || !strings.Contains(strings.ToLower(stderr), "not found") || strings.Contains(stderr, "flag") {
			t.Errorf("task %s -AAA...: %v, stderr %q; want the server's unknown-task error", verb, err, stderr)
		}
	}
}

// mcpq task ls lists the caller's tasks from the REST index, filtered by
// --status and cut at --limit; mcpq tasks (its old name) is gone.
func TestCLITaskList(t *testing.T) {
	url := startDev(t)
	ctx := within(t)
	c := taskClient(url)
	long := map[string]any{"frames": 600, "frameMs": 10000, "size": 16}
	working := createTask(t, ctx, c, "render_gif", long).TaskID
	cancelled := createTask(t, ctx, c, "render_gif", long).TaskID
	if _, err := c.CancelTask(ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	waitTask(t, ctx, c, cancelled, "cancelled", func(g *proto.GetTaskResult) bool { return g.Status == proto.StatusCancelled })
	t.Cleanup(func() { _, _ = c.CancelTask(context.Background(), working) })

	ls := func(args ...string) (string, string, error) {
		p := startCLI(t, ctx, nil, append([]string{"task", "ls", "--server", url}, args...)...)
		err := p.wait()
		stdout, stderr := p.output()
		return stdout, stderr, err
	}
	// rows maps each listed task id to its status.
	rows := func(stdout string) map[string]string {
		m := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
			if f := strings.Fields(line); len(f) >= 2 && !strings.HasPrefix(line, "(more") {
				m[f[0]] = f[1]
			}
		}
		return m
	}
	for _, tc := range []struct {
		args []string
		want map[string]string
		more bool
	}{
		{nil, map[string]string{working: "working", cancelled: "cancelled"}, false},
		{[]string{"--status", "cancelled"}, map[string]string{cancelled: "cancelled"}, false},
		{[]string{"--status=working"}, map[string]string{working: "working"}, false},
		{[]string{"--limit", "1"}, nil, true}, // one of the two, newest first
	} {
		stdout, stderr, err := ls(tc.args...)
		if err != nil || !strings.HasPrefix(stdout, "TASK") {
			t.Fatalf("task ls %q: %v\n%s%s", tc.args, err, stdout, stderr)
		}
		got := rows(stdout)
		if tc.want != nil && !maps.Equal(got, tc.want) || tc.want == nil && len(got) != 1 {
			t.Errorf("task ls %q listed %v, want %v\n%s", tc.args, got, tc.want, stdout)
		}
		if strings.Contains(stdout, "(more") != tc.more {
			t.Errorf("task ls %q: more shown %v, want %v\n%s", tc.args, !tc.more, tc.more, stdout)
		}
	}
	if _, stderr, err := ls("--limit", "0"); err == nil || !strings.Contains(stderr, "--limit") {
		t.Errorf("task ls --limit 0: %v, stderr %q; want a refusal naming --limit", err, stderr)
	}
	p := startCLI(t, ctx, nil, "task", "get", working, "--server", url, "--status", "working")
	if err := p.wait(); err == nil {
		t.Error("task get accepted --status, a flag of task ls only")
	}
	p = startCLI(t, ctx, nil, "tasks", "ls")
	err := p.wait()
	_, stderr := p.output()
	if err == nil || !strings.Contains(stderr, `unknown command "tasks"`) {
		t.Errorf("mcpq tasks: %v, stderr %q; want an unknown command", err, stderr)
	}
}

// mcpq call render_gif frames=40 shows progress as it goes and saves the
// GIF, on mcpq dev and on front ends and workers as separate processes.
func TestCLIRenderGIF(t *testing.T) {
	run := func(t *testing.T, url string) {
		ctx := within(t)
		out := t.TempDir()
		p := startCLI(t, ctx, nil, "call", "render_gif", "frames=40", "frameMs=20", "size=64",
			"--server", url, "--journal", t.TempDir(), "--out", out)
		err := p.wait()
		stdout, stderr := p.output()
		if err != nil {
			t.Fatalf("mcpq call: %v\n%s\n%s", err, stdout, stderr)
		}
		frames := strings.Count(stderr, "Rendered frame ")
		if frames < 2 || !strings.Contains(stderr, "Rendered frame 40 of 40") {
			t.Errorf("progress shown %d times, want several up to frame 40:\n%s", frames, stderr)
		}
		gifs, _ := filepath.Glob(filepath.Join(out, "render_gif-*.gif"))
		if len(gifs) != 1 {
			t.Fatalf("saved GIFs: %v\n%s", gifs, stderr)
		}
		if b, err := os.ReadFile(gifs[0]); err != nil || !strings.HasPrefix(string(b), "GIF89a") {
			t.Errorf("%s is not a GIF (%v)", gifs[0], err)
		}
	}
	t.Run("dev", func(t *testing.T) { run(t, startDev(t)) })
	t.Run("processes", func(t *testing.T) { run(t, startCluster(t, redistest.Real(t), 2, 2)[1]) })
}

// Ctrl-C during mcpq call asks what to do: detach leaves the task running
// and in the journal; cancel stops it on the server.
func TestCLICtrlC(t *testing.T) {
	url := startDev(t)
	for _, tc := range []struct {
		answer string
		exitOK bool
		want   string
	}{
		{"d", true, "detached"},
		{"c", false, "cancelled"},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			ctx := within(t)
			journal := t.TempDir()
			working := make(chan struct{}, 1)
			asked := make(chan struct{}, 1)
			p := startCLI(t, ctx, func(line string) {
				switch {
				case strings.Contains(line, "working: Rendered frame"):
					select {
					case working <- struct{}{}:
					default:
					}
				case strings.Contains(line, "[c]ancel it, [d]etach"):
					asked <- struct{}{}
				}
			}, "call", "render_gif", "frames=600", "frameMs=100", "size=16", "--server", url, "--journal", journal)
			for _, ch := range []chan struct{}{working, asked} {
				if ch == asked {
					if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
						t.Fatal(err)
					}
				}
				select {
				case <-ch:
				case <-ctx.Done():
					_, e := p.output()
					t.Fatalf("no progress or question: %s", e)
				}
			}
			if _, err := io.WriteString(p.stdin, tc.answer+"\n"); err != nil {
				t.Fatal(err)
			}
			err := p.wait()
			_, stderr := p.output()
			if (err == nil) != tc.exitOK || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %v, stderr:\n%s", err, stderr)
			}
			entries, _ := (&client.FileJournal{Dir: journal}).List(ctx)
			c := &client.Client{URL: url, Tasks: true}
			if tc.answer == "d" {
				if len(entries) != 1 {
					t.Fatalf("journal after detach: %d entries", len(entries))
				}
				g, err := c.GetTask(ctx, entries[0].TaskID)
				if err != nil || g.Status.Terminal() {
					t.Fatalf("detached task: %+v %v, want it still running", g, err)
				}
				if _, err := c.CancelTask(ctx, entries[0].TaskID); err != nil {
					t.Fatal(err)
				}
				return
			}
			if len(entries) != 0 {
				t.Errorf("journal keeps %d entries after the task was cancelled", len(entries))
			}
		})
	}
}
