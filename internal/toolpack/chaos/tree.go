package chaos

import "fmt"

// TreeScript is the program of chaos_tree, a command tool (not in this Go
// pack: scripts/chaos --command-tools and e2e/trees_test.go serve it from a
// tools file as [sh, -c, TreeScript, chaos_tree, "{steps}"], with TREE_DIR
// in the worker's environment). Its shell keeps a background sleep (a
// grandchild in the program's process group) while it runs $1 steps of
// 0.5 s. Each run first appends to $TREE_DIR/<task>.alive the processes of
// the task's earlier runs that still live ("attempt pid state"), then its
// own pid and its child's to <task>.pids ("attempt pid"), so a check reads
// from the runs themselves whether two ever overlapped.
const TreeScript = `log="$TREE_DIR/$MCPQ_TASK_ID"
for p in $(cut -d' ' -f2 "$log.pids" 2>/dev/null); do
  s=$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)
  case "$s" in ""|Z|X) ;; *) echo "$MCPQ_ATTEMPT $p $s" >> "$log.alive" ;; esac
done
echo "$MCPQ_ATTEMPT $$" >> "$log.pids"
sleep 600 &
echo "$MCPQ_ATTEMPT $!" >> "$log.pids"
echo '{"status":"running"}' >&3
i=0
while [ "$i" -lt "$1" ]; do sleep 0.5; i=$((i+1)); echo "{\"status\":\"step $i/$1\"}" >&3; done
kill $! 2>/dev/null
echo "tree $1"`

// TreeStepMs is the length of one chaos_tree step.
const TreeStepMs = 500

// TreeTools is a tools file serving chaos_tree.
func TreeTools() string {
	return fmt.Sprintf(`tools:
  - name: chaos_tree
    inputSchema: {type: object, properties: {steps: {type: integer, minimum: 0}}, required: [steps]}
    command: [sh, -c, %q, chaos_tree, "{steps}"]
    grace: 1s
    policy: task
`, TreeScript)
}

// TreeResult is chaos_tree's result text for steps.
func TreeResult(steps int) string { return fmt.Sprintf("tree %d", steps) }
