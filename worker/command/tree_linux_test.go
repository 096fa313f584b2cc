package command

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpq/mcpq/mcpqtest"
)

// startOrphanGroup starts, in a process group of its own, a shell with a
// background child, with task and attempt in its environment as a run's
// program has them, and returns the group's id once both run.
func startOrphanGroup(t *testing.T, task string, attempt int) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 300 & wait")
	cmd.Env = append(os.Environ(), envTaskID+"="+task, fmt.Sprintf("%s=%d", envAttempt, attempt))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	go cmd.Wait()
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	waitFor(t, "the shell and its child", func() bool { return len(groupMembers(t, pgid)) == 2 })
	return pgid
}

// waitFor waits (bounded by mcpqtest.Bound) until ok holds.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(mcpqtest.Bound)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", mcpqtest.Bound, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// recordRun writes a run record into k's folder as a run would.
func recordRun(t *testing.T, k *keeper, rec runRecord) string {
	t.Helper()
	rec.Boot = k.boot
	path := filepath.Join(k.dir, fmt.Sprintf("%d-%d-test%d.json", rec.Worker.Pid, rec.Worker.Start, rec.Pgid))
	b := fmt.Appendf(nil, `{"boot":%q,"worker":{"pid":%d,"start":%d},"task":%q,"attempt":%d,"pgid":%d}`,
		rec.Boot, rec.Worker.Pid, rec.Worker.Start, rec.Task, rec.Attempt, rec.Pgid)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func testKeeper(t *testing.T) *keeper {
	return newKeeper(filepath.Join(t.TempDir(), "runs"), "", slog.New(slog.DiscardHandler))
}

// TestSweepKillsTheRunsOfADeadWorker: a recorded run whose worker process
// is gone (same pid, another start time: the pid was reused) has its whole
// group killed, grandchild included, and its record removed; a live
// worker's run is left alone until a newer attempt of its task starts.
func TestSweepKillsTheRunsOfADeadWorker(t *testing.T) {
	k := testKeeper(t)
	dead := procID{Pid: k.self.Pid, Start: k.self.Start + 1}
	orphan := startOrphanGroup(t, "t1", 1)
	orphanRec := recordRun(t, k, runRecord{Worker: dead, Task: "t1", Attempt: 1, Pgid: orphan})
	live := startOrphanGroup(t, "t2", 1)
	liveRec := recordRun(t, k, runRecord{Worker: k.self, Task: "t2", Attempt: 1, Pgid: live})

	k.sweep("", 0)
	waitGroupGone(t, orphan)
	if _, err := os.Stat(orphanRec); !os.IsNotExist(err) {
		t.Fatalf("the dead worker's record is still there: %v", err)
	}
	if n := len(groupMembers(t, live)); n != 2 {
		t.Fatalf("the live worker's run has %d processes after the sweep, want 2", n)
	}
	k.sweep("t2", 1) // the same attempt again: still its own
	if n := len(groupMembers(t, live)); n != 2 {
		t.Fatalf("attempt 1's run has %d processes after a sweep for attempt 1, want 2", n)
	}
	k.sweep("t2", 2) // attempt 2 starts here: attempt 1 is fenced off
	waitGroupGone(t, live)
	if _, err := os.Stat(liveRec); !os.IsNotExist(err) {
		t.Fatalf("the older attempt's record is still there: %v", err)
	}
}

// TestSweepSparesAReusedGroup: a dead worker's record whose group id now
// belongs to processes without the run's task and attempt (the id was
// reused) kills nothing; the record goes.
func TestSweepSparesAReusedGroup(t *testing.T) {
	k := testKeeper(t)
	other := startOrphanGroup(t, "someone-else", 7)
	rec := recordRun(t, k, runRecord{Worker: procID{Pid: 1, Start: 1}, Task: "t1", Attempt: 1, Pgid: other})
	k.sweep("", 0)
	if n := len(groupMembers(t, other)); n != 2 {
		t.Fatalf("an unrelated group has %d processes after the sweep, want 2", n)
	}
	if _, err := os.Stat(rec); !os.IsNotExist(err) {
		t.Fatalf("the stale record is still there: %v", err)
	}
}

// TestRunRecordLifetime: while the program runs, its record names this
// worker process, the task, the attempt and the program's group; once the
// run ended it is gone.
func TestRunRecordLifetime(t *testing.T) {
	env := mcpqtest.New(t, mustNew(t, sh("group", groupScript)))
	run, pgid := startGroup(t, env)
	k := trees(slog.Default())
	found := false
	for _, p := range mustGlobT(t, filepath.Join(k.dir, "*.json")) {
		b, _ := os.ReadFile(p)
		var rec runRecord
		if json.Unmarshal(b, &rec) != nil || rec.Pgid != pgid {
			continue
		}
		found = true
		if rec.Worker != k.self || rec.Task != run.TaskID() || rec.Attempt != 1 {
			t.Fatalf("record %s", b)
		}
	}
	if !found {
		t.Fatalf("no record in %s names group %d", k.dir, pgid)
	}
	run.Cancel(t)
	run.End(t)
	waitGroupGone(t, pgid)
	for _, p := range mustGlobT(t, filepath.Join(k.dir, "*.json")) {
		if b, _ := os.ReadFile(p); strings.Contains(string(b), fmt.Sprintf(`"pgid":%d,`, pgid)) {
			t.Fatalf("record %s left after the run", b)
		}
	}
}

// TestCgroupKillsWhatLeftTheGroup: where runs get a cgroup, a child that
// moved to a session of its own (setsid) and ignores SIGTERM does not
// outlive the run.
func TestCgroupKillsWhatLeftTheGroup(t *testing.T) {
	if trees(slog.Default()).cgroot == "" {
		t.Skip("no writable cgroup v2 here: runs have process groups only")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid program")
	}
	env := mcpqtest.New(t, mustNew(t, sh("escape", `setsid sh -c 'trap "" TERM; exec sleep 300' </dev/null >/dev/null 2>&1 &
echo $!`)))
	res := env.Call(t, "escape", map[string]any{}).Result(t)
	var pid int
	if _, err := fmt.Sscanf(res.Content[0].Text, "%d", &pid); res.IsError || err != nil {
		t.Fatalf("result %+v: %v", res, err)
	}
	waitProcGone(t, pid)
}

// waitProcGone waits (bounded) until process pid has ended.
func waitProcGone(t *testing.T, pid int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("process %d to end", pid), func() bool {
		_, err := procOf(pid)
		return err != nil
	})
}

func mustGlobT(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMissingProgramKeepsCgroups: a program that cannot start at all says
// nothing about cgroups: later runs still get theirs.
func TestMissingProgramKeepsCgroups(t *testing.T) {
	k := trees(slog.Default())
	if k.cgroot == "" || k.noCg.Load() {
		t.Skip("no writable cgroup v2 here")
	}
	env := mcpqtest.New(t, mustNew(t, Spec{Name: "missing", Command: []string{"/nonexistent/program"}}))
	if res := env.Call(t, "missing", map[string]any{}).Result(t); !res.IsError {
		t.Fatalf("result %+v, want a tool error", res)
	}
	if k.noCg.Load() {
		t.Fatal("a missing program turned cgroups off")
	}
}
