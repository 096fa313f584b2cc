package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/billing"
)

// billedTools is a tools file with one priced command tool that reports
// 4 units of usage every quarter second, 20 times (80 units a full run).
const billedTools = `tools:
  - name: gpu_burn
    description: burns GPU units
    policy: task
    price: {base: 200}
    command: ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo '{\"usage\": 4}' >&3; sleep 0.25; done; echo burnt"]
`

// TestBillingAfterSIGKILL: with billing on, priced command tools metering
// their usage on a worker killed with SIGKILL mid-run are taken back, run
// again on another worker and settle once each: the account balances
// (credited = balance + reserved + charged), nothing stays reserved, each
// task has one settle entry, and its receipt (in the result _meta) charges
// the usage both deliveries reported, within the reservation.
func TestBillingAfterSIGKILL(t *testing.T) {
	t.Parallel()
	b := redistest.Real(t)
	file := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(file, []byte(billedTools), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix, "MCPQ_LOST_AFTER=2s"}
	doomed := start(t, "worker A", env, nil, "worker", "--tools", file)
	url := startFrontend(t, env, "--billing")
	waitCatalog(t, url, "gpu_burn")
	ctx := within(t)
	c := taskClient(url)
	store := taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix})
	who := frontend.AnonymousPrincipal
	if _, err := store.Accounts().Credit(ctx, who, 900); err != nil {
		t.Fatal(err)
	}

	var ids []string
	for range 4 {
		ids = append(ids, createTask(t, ctx, c, "gpu_burn", map[string]any{}).TaskID)
	}
	// A fifth call is more than the balance covers: a tool error, no task.
	res, err := c.CallTool(ctx, "gpu_burn", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Result == nil || !res.Result.IsError || res.Result.Meta[proto.MetaFunds] == nil {
		t.Fatalf("uncovered call answered %+v", res)
	}
	holds := taskstate.Keys{Prefix: b.Prefix}.Holds(taskstate.OwnerTag(who))
	for _, id := range ids { // each has metered some usage on worker A
		waitTask(t, ctx, c, id, "metering on worker A", func(*proto.GetTaskResult) bool {
			u, _ := b.Client.HGet(context.Background(), holds, "u:"+id).Int64()
			return u >= 8
		})
	}
	start(t, "worker B", env, nil, "worker", "--tools", file)
	doomed.kill(t)

	for _, id := range ids {
		g := waitTask(t, ctx, c, id, "completed on worker B", func(g *proto.GetTaskResult) bool { return g.Status.Terminal() })
		if g.Status != proto.StatusCompleted || !strings.Contains(string(g.Result), "burnt") {
			t.Fatalf("task %s ended %s: %s", id, g.Status, g.Result)
		}
		var r struct {
			Meta map[string]billing.Receipt `json:"_meta"`
		}
		if err := json.Unmarshal(g.Result, &r); err != nil {
			t.Fatal(err)
		}
		rc := r.Meta[proto.MetaReceipt]
		if rc.Reserved != 200 || rc.Charged <= 80 || rc.Charged > 200 || rc.Charged+rc.Released != 200 || len(rc.Entries) != 2 {
			t.Fatalf("task %s receipt %+v: want more than one full run's 80 units charged, within 200", id, rc)
		}
	}
	a, err := store.Accounts().Get(ctx, who)
	if err != nil {
		t.Fatal(err)
	}
	if a.Reserved != 0 || a.Credited != a.Balance+a.Reserved+a.Charged || a.Balance < 0 {
		t.Fatalf("account %+v", a)
	}
	entries, _, err := store.Accounts().Ledger(ctx, who, "", billing.MaxPage)
	if err != nil {
		t.Fatal(err)
	}
	settles := map[string]int{}
	var charged int64
	for _, e := range entries {
		if e.Kind == "settle" || e.Kind == "release" {
			settles[e.Task]++
			charged += e.Charged
		}
	}
	for _, id := range ids {
		if settles[id] != 1 {
			t.Fatalf("task %s settled %d times", id, settles[id])
		}
	}
	if charged != a.Charged || len(settles) != len(ids) {
		t.Fatalf("ledger charged %d over %d settlements; account %+v", charged, len(settles), a)
	}
}
