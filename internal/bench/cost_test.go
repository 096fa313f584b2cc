package bench

import (
	"strings"
	"testing"
	"time"
)

func TestRedisCostPerOp(t *testing.T) {
	before := redisMeter{cpu: time.Second, cmds: map[string]cmdStat{
		"evalsha": {calls: 10, usec: 100}, "hset": {calls: 5, usec: 5}, "info": {calls: 3, usec: 30}}}
	after := redisMeter{cpu: time.Second + 50*time.Millisecond, cmds: map[string]cmdStat{
		"evalsha": {calls: 610, usec: 12100}, "fcall": {calls: 200, usec: 4000}, "hset": {calls: 105, usec: 305},
		"info": {calls: 9000, usec: 900000}}}
	c := after.since(before, 100)
	if c.us != 500 {
		t.Errorf("CPU per op = %v µs, want 500", c.us)
	}
	// 600 EVALSHA (12,000 µs) and 200 FCALL (4,000 µs) over 100 ops.
	if c.scripts != 8 || c.scriptUs != 20 {
		t.Errorf("scripts = %v per op at %v µs, want 8 at 20", c.scripts, c.scriptUs)
	}
	if len(c.top) != 3 || !strings.HasPrefix(c.top[0], "evalsha 6.0×20.0") || strings.Contains(strings.Join(c.top, ","), "info") {
		t.Errorf("top = %q, want evalsha first and no info", c.top)
	}
}

func TestCostRowsOwnTable(t *testing.T) {
	r := &Report{}
	r.add(&Row{Group: "2", Figure: "mcpq create c=16", Value: 1000, Unit: "ops/s"})
	r.add(&Row{Group: GroupCost, Figure: "worker CPU per no-op job", Value: 150, Unit: "µs", Baseline: "raw asynq worker",
		BaselineValue: 100, Target: &Target{"ratio<=", 2}})
	var out strings.Builder
	r.Print(&out)
	main, cost, ok := strings.Cut(out.String(), "cost per operation")
	if !ok || strings.Contains(main, "worker CPU per no-op job") || !strings.Contains(main, "mcpq create") {
		t.Fatalf("cost row not in its own table:\n%s", out.String())
	}
	if !strings.Contains(cost, "1.50x") || !strings.Contains(cost, "yes") {
		t.Errorf("cost table lacks the ratio or the verdict:\n%s", cost)
	}
	var md strings.Builder
	r.Markdown(&md)
	if !strings.Contains(md.String(), "| worker CPU per no-op job | 150 µs | raw asynq worker | 100 µs | 1.50× | <= 2x | yes |") {
		t.Errorf("markdown cost row:\n%s", md.String())
	}
}
