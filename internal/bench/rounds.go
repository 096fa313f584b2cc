package bench

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
)

// The throughput groups (1 to 5) are measured in rounds. On a small, noisy
// machine a window measured now and one measured a minute later can differ
// by a third from noise alone, so a ratio of two single windows mostly
// measures the noise. Instead, at each concurrency, a round measures every
// figure once, back to back, and the run repeats the round Config.Rounds
// times. A ratio row reports the median of the per-round ratios (each
// round's mcpq figure over the same round's baseline, which ran seconds
// apart), and every value column the median of the rounds' values; the row
// keeps each round in Row.Rounds. A window the machine slowed down then
// moves one round's ratio, not the reported one.
//
// CPU and latency come from the median round: the reported row's Stats and
// CPU (the p50/p99 and the CPU per op in its note, the cpu% column) are
// those of the round whose value is the median (the lower middle one for an
// even number of rounds), so they describe one real window rather than a
// mix.

// Round is one round of a row measured in rounds.
type Round struct {
	Value         float64 `json:"value"`
	BaselineValue float64 `json:"baselineValue,omitempty"`
	// Ratio is this round's Value / BaselineValue.
	Ratio float64 `json:"ratio,omitempty"`
}

// median is the median of v (the mean of the two middle values for an even
// count; 0 for none).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// values are the rows' values, in round order.
func values(rows []*Row) []float64 {
	out := make([]float64, len(rows))
	for i, r := range rows {
		out[i] = r.Value
	}
	return out
}

// combine merges one figure's rows, one per round, into the reported row:
// the median of the rounds' values, and Stats, CPU and note details of the
// median round.
func combine(rows []*Row) *Row {
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(rows[a].Value, rows[b].Value) })
	m := rows[idx[(len(idx)-1)/2]]
	out := *m
	out.Value = median(values(rows))
	out.Rounds = make([]Round, len(rows))
	for i, r := range rows {
		out.Rounds[i] = Round{Value: r.Value}
	}
	out.Note = roundsNote(values(rows), "", m.detail, issues(rows))
	return &out
}

// compare makes row a ratio row against baseline: vals and bases are the
// rounds' figures (round i against round i). Value and BaselineValue are
// the medians of the rounds' values, Ratio the median of the per-round
// ratios (so not always Value / BaselineValue). detail and issue are added
// to the note.
func (row *Row) compare(baseline string, vals, bases []float64, target *Target, detail, issue string) {
	row.Rounds = make([]Round, len(vals))
	ratios := make([]float64, len(vals))
	for i := range vals {
		if bases[i] != 0 {
			ratios[i] = vals[i] / bases[i]
		}
		row.Rounds[i] = Round{Value: vals[i], BaselineValue: bases[i], Ratio: ratios[i]}
	}
	row.Value, row.BaselineValue, row.Ratio = median(vals), median(bases), median(ratios)
	row.Baseline, row.Target = baseline, target
	row.Note = roundsNote(ratios, "ratios ", detail, issue)
}

// compareRows is compare for rows measured by loadRow or drain: row is
// combine(num), base the baseline's rows (round i against round i).
func (row *Row) compareRows(num, base []*Row, target *Target) {
	row.compare(base[0].Figure, values(num), values(base), target, row.detail, issues(num))
}

// roundsNote says the figure is a median of rounds, lists the rounds'
// values (or ratios), then the median round's detail and any round's
// trouble.
func roundsNote(v []float64, what, detail, issue string) string {
	if len(v) == 1 {
		return strings.Join(nonEmpty(detail, issue), "; ")
	}
	parts := make([]string, len(v))
	for i, x := range v {
		if what == "" {
			parts[i] = trimFloat(x)
		} else {
			parts[i] = fmt.Sprintf("%.2f", x)
		}
	}
	note := fmt.Sprintf("median of %d rounds (%s%s)", len(v), what, strings.Join(parts, " "))
	if detail != "" {
		detail = "median round: " + detail
	}
	return strings.Join(nonEmpty(note, detail, issue), "; ")
}

// issues lists the rounds that had errors or timed out.
func issues(rows []*Row) string {
	var out []string
	for i, r := range rows {
		if r.issue == "" {
			continue
		}
		if len(rows) == 1 {
			out = append(out, r.issue)
		} else {
			out = append(out, fmt.Sprintf("round %d: %s", i+1, r.issue))
		}
	}
	return strings.Join(out, "; ")
}

func nonEmpty(s ...string) []string {
	return slices.DeleteFunc(s, func(x string) bool { return x == "" })
}

// roundDone reports one round's window on stderr as it ends.
func (s *suite) roundDone(round int, row *Row) {
	fmt.Fprintf(os.Stderr, "    round %d/%d %s: %s %s\n", round+1, s.cfg.Rounds, row.Figure, trimFloat(row.Value), row.Unit)
}
