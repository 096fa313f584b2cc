package bench

import (
	"strings"
	"testing"

	"github.com/mcpq/mcpq/taskstate"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestCompareRoundsTakesMedianOfRatios(t *testing.T) {
	row := func(v float64, detail string) *Row {
		return &Row{Figure: "f", Value: v, Unit: "ops/s", CPU: &CPU{ServerUsPerOp: v}, detail: detail}
	}
	num := []*Row{row(60, "a"), row(90, "b"), row(50, "c")}
	base := []*Row{row(100, ""), row(100, ""), row(50, "")}
	base[0].Figure = "floor"
	r := combine(num)
	if r.Value != 60 || r.CPU.ServerUsPerOp != 60 || !strings.Contains(r.Note, "median round: a") {
		t.Fatalf("combine: value %v, cpu %v, note %q", r.Value, r.CPU.ServerUsPerOp, r.Note)
	}
	r.compareRows(num, base, &Target{"ratio>=", 0.7})
	// Ratios 0.6, 0.9, 1.0: the median is 0.9, not median(num)/median(base) = 0.6.
	if r.Ratio != 0.9 || r.BaselineValue != 100 || r.Baseline != "floor" || len(r.Rounds) != 3 || r.Rounds[2].Ratio != 1 {
		t.Fatalf("compare: %+v", r)
	}
	rep := &Report{}
	rep.add(r)
	if r.Ratio != 0.9 || !*r.Met {
		t.Fatalf("add recomputed the ratio: %v met %v", r.Ratio, *r.Met)
	}
	if !strings.HasPrefix(r.Note, "median of 3 rounds (ratios 0.60 0.90 1.00)") {
		t.Fatalf("note %q", r.Note)
	}
}

// TestIDTemplateFitsNewIDs: the tasks/get template patches a real task id
// into both places (header and body), so the loads read records that exist.
func TestIDTemplateFitsNewIDs(t *testing.T) {
	tpl := newIDTemplate("127.0.0.1:1", "tasks/get")
	id := taskstate.NewID()
	req := string(tpl.fill(nil, id))
	if strings.Count(req, id) != 2 || strings.Contains(req, "XXXX") {
		t.Fatalf("template filled with %s:\n%s", id, req)
	}
}
