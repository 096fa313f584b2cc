package command

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/proto"
)

// groupMembers lists the live (not zombie) processes of process group
// pgid, from /proc.
func groupMembers(t *testing.T, pgid int) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		s := string(b)
		rest := s[strings.LastIndexByte(s, ')')+2:]
		f := strings.Fields(rest)
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			live = append(live, s[:strings.LastIndexByte(s, ')')+1]+" "+f[0])
		}
	}
	return live
}

// waitGroupGone waits (bounded by mcpqtest.Bound) until no live process
// is left in group pgid.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(mcpqtest.Bound)
	for {
		live := groupMembers(t, pgid)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of group %d still alive: %v", pgid, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// groupScript runs two children that, like their shell, ignore SIGTERM
// (so only SIGKILL ends them), and reports its process group.
const groupScript = `trap '' TERM
sleep 300 & sleep 300 &
printf '{"status":"pgid %d"}\n' $$ >&3
wait`

// startGroup calls a tool running groupScript and returns the run and the
// program's process group, once its three processes are up.
func startGroup(t *testing.T, env *mcpqtest.Env) (*mcpqtest.Run, int) {
	t.Helper()
	run := env.Call(t, "group", map[string]any{})
	st := run.WaitFor(t, "the program's process group", func(s mcpqtest.State) bool {
		return strings.HasPrefix(s.StatusMessage, "pgid ") || s.Status.Terminal()
	})
	var pgid int
	if _, err := fmt.Sscanf(st.StatusMessage, "pgid %d", &pgid); err != nil {
		t.Fatalf("status %q: %v", st.StatusMessage, err)
	}
	deadline := time.Now().Add(mcpqtest.Bound)
	for len(groupMembers(t, pgid)) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("group %d: %v, want the shell and two sleeps", pgid, groupMembers(t, pgid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return run, pgid
}

// TestCancelKillsTheWholeGroup: a cancel ends the task cancelled, and no
// process of the program's group survives, including children that ignore
// SIGTERM (they get SIGKILL after the grace period).
func TestCancelKillsTheWholeGroup(t *testing.T) {
	env := mcpqtest.New(t, mustNew(t, sh("group", groupScript)))
	run, pgid := startGroup(t, env)
	run.Cancel(t)
	if st := run.End(t); st.Status != proto.StatusCancelled {
		t.Fatalf("ended %s (%s)", st.Status, st.StatusMessage)
	}
	waitGroupGone(t, pgid)
}

// TestExpiryKillsTheWholeGroup: the same when the task's TTL runs out.
func TestExpiryKillsTheWholeGroup(t *testing.T) {
	env := mcpqtest.New(t, mustNew(t, sh("group", groupScript)))
	run, pgid := startGroup(t, env)
	run.Expire(t)
	waitGroupGone(t, pgid)
}

// TestExitKillsWhatTheProgramLeft: a program that exits leaving children
// in its group running completes, and the children are killed.
func TestExitKillsWhatTheProgramLeft(t *testing.T) {
	env := mcpqtest.New(t, mustNew(t, sh("leaver", `sleep 300 & sleep 300 & echo $$`)))
	res := env.Call(t, "leaver", map[string]any{}).Result(t)
	var pgid int
	if _, err := fmt.Sscanf(res.Content[0].Text, "%d", &pgid); res.IsError || err != nil {
		t.Fatalf("result %+v: %v", res, err)
	}
	waitGroupGone(t, pgid)
}
