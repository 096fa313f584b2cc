package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// TestHandBack: two workers on one queue, each serving one tool. A job
// for the other worker's tool is handed back (handback.go) until that
// worker takes it: jobs for both tools all complete, each on the worker
// that serves it. While handed back a task shows nothing of it (working,
// Queued, never claimed).
func TestHandBack(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		h := newHarness(t, b)
		ran := func(who string) worker.Handler {
			return func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
				return worker.TextResult("run by " + who), nil
			}
		}
		config := func() (worker.Config, *prometheus.Registry) {
			cfg := h.config()
			// Served for three minutes after a worker's last heartbeat, so
			// beta stays served while its worker is away; handed back
			// every 20 ms.
			cfg.CatalogInterval, cfg.BusyDelay = time.Minute, 20*time.Millisecond
			cfg.Metrics = prometheus.NewRegistry()
			return cfg, cfg.Metrics
		}
		cfgB, _ := config()
		h.start(t, cfgB, h.tool("beta", ran("B"))).Stop() // beta is in the catalog, served; B takes no job
		cfgA, regA := config()
		h.start(t, cfgA, h.tool("alpha", ran("A")))

		// With B away, A is the only one to take beta's job: it hands it
		// back, again and again, a BusyDelay apart.
		early := h.submit(t, "beta", `{}`)
		until(t, "a hand-back", func() bool { return labelled(t, regA, "mcpq_worker_handbacks_total", "requeued") >= 2 })
		if rec := h.get(t, early.ref); rec.Status != proto.StatusWorking || rec.StatusMessage != "" ||
			rec.Attempt != 0 || rec.Running != 0 {
			t.Fatalf("a handed-back task shows %s %q attempt %d running %d; want working, as created, unclaimed",
				rec.Status, rec.StatusMessage, rec.Attempt, rec.Running)
		}

		cfgB, _ = config()
		h.start(t, cfgB, h.tool("beta", ran("B")))
		tasks := []task{early}
		want := map[string]string{"alpha": "run by A", "beta": "run by B"}
		kinds := []string{"beta"}
		for i := range 20 {
			tool := []string{"alpha", "beta"}[i%2]
			tasks = append(tasks, h.submit(t, tool, `{}`))
			kinds = append(kinds, tool)
		}
		for i, tk := range tasks {
			rec := h.terminal(t, tk)
			if rec.Status != proto.StatusCompleted || !strings.Contains(string(rec.Result), want[kinds[i]]) || rec.Attempt != 1 {
				t.Errorf("%s task ended %s (attempt %d) with %s %+v, want completed %q at its first claim",
					kinds[i], rec.Status, rec.Attempt, rec.Result, rec.Error, want[kinds[i]])
			}
		}
	})
}

// labelled reads one labelled counter of a worker's registry (0 when absent).
func labelled(t testing.TB, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
