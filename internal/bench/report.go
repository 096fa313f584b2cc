package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// Target is what a figure should reach.
type Target struct {
	// Kind is "ratio>=" (Ratio at least X), "ratio<=" (at most X), or
	// "value<=" (Value at most X, in the row's unit).
	Kind string  `json:"kind"`
	X    float64 `json:"x"`
}

func (t *Target) String() string {
	if t == nil {
		return ""
	}
	switch t.Kind {
	case "ratio>=":
		return fmt.Sprintf(">= %.2gx", t.X)
	case "ratio<=":
		return fmt.Sprintf("<= %.2gx", t.X)
	}
	return "<= " + trimFloat(t.X)
}

// Row is one figure of the report.
type Row struct {
	// Group names the issue's measurement the row belongs to (1 to 11).
	Group string `json:"group"`
	// Figure says what was measured.
	Figure string `json:"figure"`
	// Value and Unit are the measured figure.
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Baseline names the figure the ratio is taken against.
	Baseline      string  `json:"baseline,omitempty"`
	BaselineValue float64 `json:"baselineValue,omitempty"`
	// Ratio is Value / BaselineValue, or for a row measured in rounds the
	// median of the per-round ratios.
	Ratio float64 `json:"ratio,omitempty"`
	// Target and Met: the issue's target and whether this run meets it.
	Target *Target `json:"target,omitempty"`
	Met    *bool   `json:"met,omitempty"`
	// CPU is where the CPU went during the measurement (throughput rows).
	CPU *CPU `json:"cpu,omitempty"`
	// Stats is the load run behind the row.
	Stats *Stats `json:"stats,omitempty"`
	// Note adds context (p99, errors, what was measured).
	Note string `json:"note,omitempty"`
	// Rounds are the per-round figures of a row measured in rounds (groups
	// 1 to 5; see rounds.go): Value, BaselineValue and Ratio are their
	// medians.
	Rounds []Round `json:"rounds,omitempty"`

	// detail is one window's note without its trouble, issue the trouble
	// (errors, a timeout); combine builds a rounds row's note from them.
	detail, issue string
	// allocs is a drain's heap allocations per job in the worker child.
	allocs float64
}

// Machine describes where the run happened.
type Machine struct {
	NumCPU       int    `json:"nproc"`
	MemTotal     string `json:"memTotal"`
	GoVersion    string `json:"goVersion"`
	RedisVersion string `json:"redisVersion"`
	Kernel       string `json:"kernel"`
	CPUModel     string `json:"cpuModel"`
}

// Report is a whole run.
type Report struct {
	Started  time.Time     `json:"started"`
	Elapsed  time.Duration `json:"elapsedNs"`
	Command  string        `json:"command"`
	Machine  Machine       `json:"machine"`
	Settings Config        `json:"settings"`
	Rows     []*Row        `json:"rows"`
	Skipped  []string      `json:"skipped,omitempty"`
	Profiles []string      `json:"profiles,omitempty"`
}

// add appends a row and returns it.
func (r *Report) add(row *Row) *Row {
	if row.BaselineValue != 0 && row.Rounds == nil {
		row.Ratio = row.Value / row.BaselineValue
	}
	if row.Target != nil {
		met := false
		switch row.Target.Kind {
		case "ratio>=":
			met = row.BaselineValue != 0 && row.Ratio >= row.Target.X
		case "ratio<=":
			met = row.BaselineValue != 0 && row.Ratio <= row.Target.X
		case "value<=":
			met = row.Value <= row.Target.X
		}
		row.Met = &met
	}
	r.Rows = append(r.Rows, row)
	fmt.Fprintf(os.Stderr, "    %s: %s %s\n", row.Figure, trimFloat(row.Value), row.Unit)
	return row
}

// find returns the first row with the figure's name, or nil.
func (r *Report) find(figure string) *Row {
	for _, row := range r.Rows {
		if row.Figure == figure {
			return row
		}
	}
	return nil
}

func trimFloat(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// Print writes the table.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "mcpq benchmarks: %s; %d cores, %s RAM; %s; redis-server %s\n", r.Started.Format(time.RFC3339),
		r.Machine.NumCPU, r.Machine.MemTotal, r.Machine.GoVersion, r.Machine.RedisVersion)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tfigure\tvalue\tbaseline\tratio\ttarget\tmet?\tcpu% srv/redis/gen/all\tnote")
	for _, row := range r.Rows {
		if row.Group == GroupCost {
			continue // in the cost table below
		}
		base, ratio, met, cpu := "", "", "", ""
		if row.Baseline != "" {
			base = fmt.Sprintf("%s (%s)", row.Baseline, trimFloat(row.BaselineValue))
			ratio = fmt.Sprintf("%.2fx", row.Ratio)
		}
		if row.Met != nil {
			met = map[bool]string{true: "yes", false: "NO"}[*row.Met]
		}
		if row.CPU != nil {
			cpu = fmt.Sprintf("%.0f/%.0f/%.0f/%.0f", row.CPU.Server, row.CPU.Redis, row.CPU.LoadGen, row.CPU.Machine)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.Group, row.Figure, trimFloat(row.Value), row.Unit,
			base, ratio, row.Target.String(), met, cpu, row.Note)
	}
	_ = tw.Flush()
	r.printCost(w)
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", s)
	}
	for _, p := range r.Profiles {
		fmt.Fprintf(w, "profile: %s\n", p)
	}
	fmt.Fprintf(w, "elapsed %s\n", r.Elapsed.Round(time.Second))
}

// Markdown writes the table as Markdown (for docs/benchmarks.md).
func (r *Report) Markdown(w io.Writer) {
	fmt.Fprintln(w, "| # | figure | value | baseline | ratio | target | met? | CPU % server/redis/loadgen/machine | note |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, row := range r.Rows {
		if row.Group == GroupCost {
			continue // in the cost table below
		}
		base, ratio, met, cpu := "", "", "", ""
		if row.Baseline != "" {
			base = fmt.Sprintf("%s (%s)", row.Baseline, trimFloat(row.BaselineValue))
			ratio = fmt.Sprintf("%.2f×", row.Ratio)
		}
		if row.Met != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[*row.Met]
		}
		if row.CPU != nil {
			cpu = fmt.Sprintf("%.0f / %.0f / %.0f / %.0f", row.CPU.Server, row.CPU.Redis, row.CPU.LoadGen, row.CPU.Machine)
		}
		fmt.Fprintf(w, "| %s | %s | %s %s | %s | %s | %s | %s | %s | %s |\n", row.Group, esc(row.Figure), trimFloat(row.Value),
			row.Unit, esc(base), ratio, esc(row.Target.String()), met, cpu, esc(row.Note))
	}
	r.markdownCost(w)
}

// costRows are the cost group's rows (measure_cost.go).
func (r *Report) costRows() []*Row {
	var out []*Row
	for _, row := range r.Rows {
		if row.Group == GroupCost {
			out = append(out, row)
		}
	}
	return out
}

// costCells are a cost row's columns: value, floor, floor's value, ratio,
// target and met.
func costCells(row *Row, times string, no string) []string {
	floor, fv, ratio, met := "", "", "", ""
	if row.Baseline != "" {
		floor, fv = row.Baseline, trimFloat(row.BaselineValue)+" "+row.Unit
		if row.Ratio != 0 {
			ratio = fmt.Sprintf("%.2f%s", row.Ratio, times)
		}
	}
	if row.Met != nil {
		met = map[bool]string{true: "yes", false: no}[*row.Met]
	}
	return []string{row.Figure, trimFloat(row.Value) + " " + row.Unit, floor, fv, ratio, row.Target.String(), met}
}

// printCost writes the cost table: what one operation costs each process,
// each figure beside its floor from the same run.
func (r *Report) printCost(w io.Writer) {
	rows := r.costRows()
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\ncost per operation (each floor from this run):")
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\tfloor\tfloor value\tratio\ttarget\tmet?\tnote")
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(append(costCells(row, "x", "NO"), row.Note), "\t"))
	}
	_ = tw.Flush()
}

// markdownCost writes the cost table as Markdown.
func (r *Report) markdownCost(w io.Writer) {
	rows := r.costRows()
	if len(rows) == 0 {
		return
	}
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	fmt.Fprintln(w, "\n| cost figure | value | floor | floor value | ratio | target | met? | note |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, row := range rows {
		cells := append(costCells(row, "×", "**no**"), row.Note)
		for i := range cells {
			cells[i] = esc(cells[i])
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
