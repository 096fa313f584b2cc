package billmetrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpq/mcpq/taskstate/billing"
)

// TestSharedRegistry: a front end and a worker on one registry (mcpq dev)
// count into the same series, and each settlement adds its receipt.
func TestSharedRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	fe, w := New(reg), New(reg)
	fe.Reserved("render", 300)
	fe.Refused("render")
	fe.Settled(billing.Settlement{Tool: "render", Receipt: billing.Receipt{Reserved: 100, Charged: 5, Released: 95}})
	w.Settled(billing.Settlement{Tool: "render", Receipt: billing.Receipt{Reserved: 100, Charged: 100, Usage: 250, Capped: true}})
	w.Settled(billing.Settlement{Tool: "render", Receipt: billing.Receipt{Reserved: 100, Released: 100}})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "tool" || m.GetLabel()[0].GetValue() != "render" {
				t.Errorf("%s has labels %v, want tool=render only", f.GetName(), m.GetLabel())
			}
			got[f.GetName()] += m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"mcpq_billing_reserved_units_total": 300,
		"mcpq_billing_refused_total":        1,
		"mcpq_billing_charged_units_total":  105,
		"mcpq_billing_released_units_total": 195,
		"mcpq_billing_capped_total":         1,
	}
	if len(got) != len(want) {
		t.Errorf("registry holds %v, want %v", got, want)
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}
}
