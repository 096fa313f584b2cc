package series

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// View is the fleet's last minutes as GET /v1/ops/series answers them
// (docs/dashboard.md): one value per minute, oldest first, the last one
// the minute now under way.
type View struct {
	// From is the start of the first minute (unix ms); StepMs 60000.
	From   int64 `json:"from"`
	StepMs int64 `json:"stepMs"`
	// Series are fleet totals per minute: created, completed, failed,
	// cancelled (tasks ended so), claimed (deliveries: jobs out of the
	// queues), cancelRequests, takeovers (reruns of a lost worker's
	// tasks), refusals (creates refused for funds), expired.
	Series map[string][]int64 `json:"series"`
	// ByTool splits created, completed, failed and cancelled by tool;
	// "" holds ends whose tool the process that ended them did not know.
	ByTool map[string]map[string][]int64 `json:"byTool"`
	// Depth is each queue's pending jobs, the last sample of each minute
	// (null: none taken).
	Depth map[string][]*int64 `json:"depth"`
	// Latency holds pickupP50Ms, pickupP99Ms, durationP50Ms and
	// durationP99Ms per minute (null: nothing observed): the upper bound
	// of the histogram bucket the percentile falls in.
	Latency map[string][]*int64 `json:"latency"`
	// Rates are per second over the last 60 s (the minute under way and
	// the part of the one before it that is within 60 s).
	Rates Rates `json:"rates"`
	// Billing is units by tool summed over the window.
	Billing []ToolBilling `json:"billing"`
}

// Rates are the fleet's throughput now.
type Rates struct {
	// CreatedPerSec are tasks in; ClaimedPerSec deliveries out of the
	// queues; EndedPerSec tasks ended (any status).
	CreatedPerSec float64 `json:"createdPerSec"`
	ClaimedPerSec float64 `json:"claimedPerSec"`
	EndedPerSec   float64 `json:"endedPerSec"`
}

// ToolBilling is one tool's billing units in the window.
type ToolBilling struct {
	Tool     string `json:"tool"`
	Reserved int64  `json:"reserved"`
	Charged  int64  `json:"charged"`
	Released int64  `json:"released"`
	// Refused counts creates refused for funds.
	Refused int64 `json:"refused"`
}

// Read returns the n minutes up to the one holding now (1 ≤ n ≤
// MaxMinutes; out of range is clamped), read with one pipeline of n
// HGETALLs.
func Read(ctx context.Context, rdb redis.UniversalClient, prefix string, now time.Time, n int) (*View, error) {
	n = min(max(n, 1), MaxMinutes)
	last := now.Unix() / 60
	first := last - int64(n) + 1
	keys := Keys{Prefix: prefix}
	pipe := rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, n)
	for i := range n {
		cmds[i] = pipe.HGetAll(ctx, keys.Minute(first+int64(i)))
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, err
	}
	b := newBuilder(first, n)
	for i, c := range cmds {
		for f, v := range c.Val() {
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				continue // not written by a Recorder
			}
			b.take(i, f, x)
		}
	}
	return b.view(now), nil
}

// builder folds minutes' fields into a View.
type builder struct {
	v         *View
	n         int
	billing   map[string]*ToolBilling
	histogram map[string][][]int64 // pickup, duration → minute → bucket counts
}

// The series View.Series always has, so a chart has a line at 0.
var seriesNames = []string{"created", "completed", "failed", "cancelled", "claimed", "cancelRequests", "takeovers", "refusals", "expired"}

func newBuilder(first int64, n int) *builder {
	v := &View{From: first * 60_000, StepMs: 60_000, Series: map[string][]int64{}, ByTool: map[string]map[string][]int64{},
		Depth: map[string][]*int64{}, Latency: map[string][]*int64{}, Billing: []ToolBilling{}}
	for _, s := range seriesNames {
		v.Series[s] = make([]int64, n)
	}
	return &builder{v: v, n: n, billing: map[string]*ToolBilling{}, histogram: map[string][][]int64{}}
}

// take folds field f = x of minute i.
func (b *builder) take(i int, f string, x int64) {
	kind, rest := split(f)
	switch kind {
	case created:
		b.v.Series["created"][i] += x
		b.tool(rest, "created")[i] += x
	case ended:
		status, tool, _ := strings.Cut(rest, "|")
		if status == "completed" || status == "failed" || status == "cancelled" {
			b.v.Series[status][i] += x
			b.tool(tool, status)[i] += x
		}
	case claimed:
		b.v.Series["claimed"][i] += x
	case cancels:
		b.v.Series["cancelRequests"][i] += x
	case takeovers:
		if rest == TakeoverRerun {
			b.v.Series["takeovers"][i] += x
		}
	case expired:
		b.v.Series["expired"][i] += x
	case refused:
		b.v.Series["refusals"][i] += x
		b.bill(rest).Refused += x
	case reserved:
		b.bill(rest).Reserved += x
	case charged:
		b.bill(rest).Charged += x
	case released:
		b.bill(rest).Released += x
	case depth:
		if b.v.Depth[rest] == nil {
			b.v.Depth[rest] = make([]*int64, b.n)
		}
		b.v.Depth[rest][i] = &x
	case pickup, duration:
		k, err := strconv.Atoi(rest)
		if err != nil || k < 0 || k > len(bucketBounds) {
			return
		}
		h := b.histogram[kind]
		if h == nil {
			h = make([][]int64, b.n)
			b.histogram[kind] = h
		}
		if h[i] == nil {
			h[i] = make([]int64, len(bucketBounds)+1)
		}
		h[i][k] += x
	}
}

func (b *builder) tool(name, series string) []int64 {
	t := b.v.ByTool[name]
	if t == nil {
		t = map[string][]int64{}
		for _, s := range []string{"created", "completed", "failed", "cancelled"} {
			t[s] = make([]int64, b.n)
		}
		b.v.ByTool[name] = t
	}
	return t[series]
}

func (b *builder) bill(tool string) *ToolBilling {
	t := b.billing[tool]
	if t == nil {
		t = &ToolBilling{Tool: tool}
		b.billing[tool] = t
	}
	return t
}

// view finishes the View: percentiles, rates, billing in tool order.
func (b *builder) view(now time.Time) *View {
	for kind, name := range map[string]string{pickup: "pickup", duration: "duration"} {
		p50, p99 := make([]*int64, b.n), make([]*int64, b.n)
		for i, h := range b.histogram[kind] {
			p50[i], p99[i] = percentile(h, 0.5), percentile(h, 0.99)
		}
		b.v.Latency[name+"P50Ms"], b.v.Latency[name+"P99Ms"] = p50, p99
	}
	frac := float64(now.Unix()%60) / 60 // of the minute under way
	rate := func(s []int64) float64 {
		r := float64(s[b.n-1])
		if b.n > 1 {
			r += float64(s[b.n-2]) * (1 - frac)
		}
		return r / 60
	}
	ended := make([]int64, b.n)
	for _, s := range []string{"completed", "failed", "cancelled"} {
		for i, x := range b.v.Series[s] {
			ended[i] += x
		}
	}
	b.v.Rates = Rates{CreatedPerSec: rate(b.v.Series["created"]), ClaimedPerSec: rate(b.v.Series["claimed"]), EndedPerSec: rate(ended)}
	for _, t := range b.billing {
		b.v.Billing = append(b.v.Billing, *t)
	}
	sort.Slice(b.v.Billing, func(i, j int) bool { return b.v.Billing[i].Tool < b.v.Billing[j].Tool })
	return b.v
}

// percentile is the upper bound (ms) of the bucket holding the q-th
// observation of histogram h; nil when h holds none.
func percentile(h []int64, q float64) *int64 {
	var total int64
	for _, c := range h {
		total += c
	}
	if total == 0 {
		return nil
	}
	rank := int64(q*float64(total) + 0.5)
	rank = max(rank, 1)
	var seen int64
	for i, c := range h {
		seen += c
		if seen >= rank {
			v := bucketBound(i)
			return &v
		}
	}
	return nil
}
