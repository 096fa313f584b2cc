package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The command-tool experiment (--command-tools, issue 25 item 2): the
// workers also serve chaos_tree, a command tool whose program leaves a
// grandchild in its process group (a shell's background job) while it
// runs, so worker SIGKILLs and SIGSTOPs hit programs with trees. Each run
// first writes which processes of its task's earlier runs still live
// (<task>.alive), then its pids (<task>.pids); the checks read those
// records.

// treeStepMs is the length of one chaos_tree step.
const treeStepMs = 500

// treeScript is chaos_tree's program; $1 is the number of steps.
const treeScript = `log="$TREE_DIR/$MCPQ_TASK_ID"
for p in $(cut -d' ' -f2 "$log.pids" 2>/dev/null); do
  s=$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)
  case "$s" in ""|Z|X) ;; *) echo "$MCPQ_ATTEMPT $p $s" >> "$log.alive" ;; esac
done
echo "$MCPQ_ATTEMPT $$" >> "$log.pids"
sleep 600 &
echo "$MCPQ_ATTEMPT $!" >> "$log.pids"
i=0
while [ "$i" -lt "$1" ]; do sleep 0.5; i=$((i+1)); echo "{\"status\":\"step $i/$1\"}" >&3; done
kill $! 2>/dev/null
echo "tree $1"`

// treeDir is where chaos_tree's runs keep their records.
func (d *driver) treeDir() string { return filepath.Join(d.cfg.logs, "trees") }

// writeTreeTools writes the tools file serving chaos_tree and returns its path.
func (d *driver) writeTreeTools() (string, error) {
	if err := os.MkdirAll(d.treeDir(), 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(d.cfg.logs, "tree-tools.yaml")
	spec := fmt.Sprintf(`tools:
  - name: chaos_tree
    inputSchema: {type: object, properties: {steps: {type: integer, minimum: 0}}, required: [steps]}
    command: [sh, -c, %q, chaos_tree, "{steps}"]
    grace: 1s
    policy: task
`, treeScript)
	return path, os.WriteFile(path, []byte(spec), 0o644)
}

// treeResult is chaos_tree's result for steps.
func treeResult(steps int) string { return fmt.Sprintf("tree %d\n", steps) }

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
