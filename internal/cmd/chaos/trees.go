package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mcpq/mcpq/internal/toolpack/chaos"
)

// The command-tool experiment (--command-tools, issue 25 item 2): the
// workers also serve chaos_tree (internal/toolpack/chaos/tree.go), a
// command tool whose program leaves a grandchild in its process group (a
// shell's background job) while it runs, so worker SIGKILLs and SIGSTOPs
// hit programs with trees. The checks read the records its runs write.

// treeDir is where chaos_tree's runs keep their records.
func (d *driver) treeDir() string { return filepath.Join(d.cfg.logs, "trees") }

// writeTreeTools writes the tools file serving chaos_tree and returns its path.
func (d *driver) writeTreeTools() (string, error) {
	if err := os.MkdirAll(d.treeDir(), 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(d.cfg.logs, "tree-tools.yaml")
	return path, os.WriteFile(path, []byte(chaos.TreeTools()), 0o644)
}

// treeChecks: no run of a chaos_tree task found a process of an earlier
// run of it alive when it started, and no process of an ended task's runs
// is left at the end.
func (d *driver) treeChecks() []check {
	runs, overlaps := 0, []string{}
	var left []string
	for _, t := range d.tasks {
		if t.tool != "chaos_tree" {
			continue
		}
		base := filepath.Join(d.treeDir(), t.id)
		if b, err := os.ReadFile(base + ".alive"); err == nil {
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				overlaps = append(overlaps, t.id+": attempt "+line)
			}
		}
		b, _ := os.ReadFile(base + ".pids")
		o := d.obs.tasks[t.id]
		ended := o != nil && len(o.endings) > 0
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			runs++
			if pid, err := strconv.Atoi(f[1]); err == nil && ended && runsFor(pid, t.id) {
				left = append(left, fmt.Sprintf("%s attempt %s pid %d", t.id, f[0], pid))
			}
		}
	}
	return []check{
		{"two runs of a task at once", fmt.Sprintf("%d (chaos_tree: %d processes recorded)%s", len(overlaps), runs, examples(overlaps)), runs > 0 && len(overlaps) == 0},
		{"processes left", fmt.Sprintf("%d of ended tasks' runs alive at the end%s", len(left), examples(left)), len(left) == 0},
	}
}

// runsFor says whether pid is a live process of a run of task id (its
// environment names the task).
func runsFor(pid int, id string) bool {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return err == nil && bytes.Contains(env, []byte("MCPQ_TASK_ID="+id+"\x00"))
}
