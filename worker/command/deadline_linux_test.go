package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/internal/workertest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/billing"
	"github.com/mcpq/mcpq/worker"
)

// deadlineScript reports 1 unit of usage every 20 ms; on SIGTERM it notes
// when the signal came (bash's $EPOCHREALTIME, no fork) and reports 1,000
// units more before it exits: reports made after the stop, which must
// never be charged.
const deadlineScript = `trap 'printf "%s\n" "$EPOCHREALTIME" > "$STOP_AT"; for i in 1 2 3 4 5; do echo "{\"usage\":200}" >&3; done; exit 0' TERM
echo $$ > "$PID_AT"
while :; do echo '{"usage":1}' >&3; sleep 0.02; done`

// TestCommandStoppedAtDeadline (issue 25, item 10, for command tools; the
// Go-tool version is worker/deadline_test.go): a command tool's program is
// sent SIGTERM at its task's deadline, not at the next reap pass
// (ReapInterval is an hour here), the process is gone, the task is
// expired, and the receipt charges only what the program reported before
// the stop. The SIGTERM's delay after the deadline is logged, and held to
// the 0.5 s.
func TestCommandStoppedAtDeadline(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	stopAt, pidAt := filepath.Join(dir, "stop"), filepath.Join(dir, "pid")
	spec := Spec{Name: "metered", Command: []string{"bash", "-c", deadlineScript}, Grace: 2 * time.Second,
		Env: map[string]string{"STOP_AT": stopAt, "PID_AT": pidAt}, Price: &proto.Price{Base: 100000}}
	tool := mustNew(t, spec)
	b := redistest.Mini(t)
	env := workertest.Start(t, b, func(ctx context.Context, cfg worker.Config) (*worker.Worker, error) {
		cfg.ReapInterval = time.Hour
		return worker.New(cfg, tool)
	})
	ctx := context.Background()
	if _, err := env.Store.Accounts().Credit(ctx, "alice", 200000); err != nil {
		t.Fatal(err)
	}
	ceiling, ttlMs := int64(100000), int64(1500)
	tk := env.Submit(t, taskstate.CreateParams{Principal: "alice", Tool: "metered", Reserve: &ceiling, TTLMs: &ttlMs}, "")
	rec, err := env.Store.Get(ctx, tk.Ref)
	if err != nil {
		t.Fatal(err)
	}
	deadline := rec.Deadline()

	pid := readInt(t, pidAt)
	waitProcGone(t, pid)
	gone := time.Now()
	b2, err := os.ReadFile(stopAt)
	if err != nil {
		t.Fatalf("the program got no SIGTERM: %v", err)
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(string(b2)), 64)
	if err != nil {
		t.Fatalf("stop time %q: %v", b2, err)
	}
	term := time.Unix(0, int64(secs*1e9))
	late := term.Sub(deadline)
	t.Logf("SIGTERM %v after the deadline; process seen gone %v after it", late, gone.Sub(deadline))
	if late < -50*time.Millisecond || late > 500*time.Millisecond {
		t.Fatalf("SIGTERM came %v after the deadline, want within 0.5 s", late)
	}
	if _, err := env.Store.Get(ctx, tk.Ref); !taskGone(err) {
		t.Fatalf("task after its program stopped: %v, want it ended expired", err)
	}
	var a billing.Account
	for end := time.Now().Add(workertest.Bound); ; time.Sleep(10 * time.Millisecond) {
		if a, err = env.Store.Accounts().Get(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if a.Reserved == 0 || time.Now().After(end) {
			break
		}
	}
	// At 1 unit per 20 ms for 1.5 s the run reported well under 200 before
	// the deadline; any of the 5×200 after the SIGTERM would show.
	if a.Reserved != 0 || a.Charged <= 0 || a.Charged >= 200 {
		t.Fatalf("account %+v: want charged only the units reported before the deadline (0 < charged < 200), none reserved", a)
	}
	t.Logf("charged %d units", a.Charged)
}

func taskGone(err error) bool {
	return err != nil && (errors.Is(err, taskstate.ErrNotFound) || errors.Is(err, taskstate.ErrExpired))
}

// readInt waits (bounded) for path to hold a number and returns it.
func readInt(t *testing.T, path string) int {
	t.Helper()
	var n int
	waitFor(t, "a number in "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		_, err = fmt.Sscanf(string(b), "%d", &n)
		return err == nil
	})
	return n
}
