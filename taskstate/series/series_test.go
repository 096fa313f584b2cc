package series_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate/series"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestRecordAndRead: what two processes count, flushed, reads back as the
// view's per-minute series, tool split, queue depth, latency percentiles,
// rates and billing by tool; minutes nothing was counted in read as 0.
func TestRecordAndRead(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		now := time.Unix(1_800_000_030, 0) // 30 s into a minute
		clock := func() time.Time { return now }
		fe := series.NewRecorder(b.Client, b.Prefix, clock)
		wk := series.NewRecorder(b.Client, b.Prefix, clock)
		for range 3 {
			fe.Created("render")
		}
		fe.Created("ocr")
		fe.CancelRequested()
		fe.Ended("", "cancelled", 0)
		fe.Refused("render")
		fe.Reserved("render", 600)
		fe.Depth("default", 7)
		wk.Claimed(20 * time.Millisecond)
		wk.Claimed(0) // a later delivery: no pickup time
		wk.Ended("render", "completed", 2*time.Second)
		wk.Ended("render", "failed", 40*time.Second)
		wk.Takeovers(series.TakeoverRerun, 1)
		wk.Settled("render", 150, 50)
		fe.Depth("default", 4) // the later sample wins
		for _, r := range []*series.Recorder{fe, wk} {
			if err := r.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		fe.Created("render") // a second flush adds to the first
		if err := fe.Flush(ctx); err != nil {
			t.Fatal(err)
		}

		v, err := series.Read(ctx, b.Client, b.Prefix, now, 3)
		if err != nil {
			t.Fatal(err)
		}
		if v.From != (now.Unix()/60-2)*60_000 || v.StepMs != 60_000 {
			t.Errorf("window from %d step %d", v.From, v.StepMs)
		}
		want := map[string][]int64{"created": {0, 0, 5}, "completed": {0, 0, 1}, "failed": {0, 0, 1}, "cancelled": {0, 0, 1},
			"claimed": {0, 0, 2}, "cancelRequests": {0, 0, 1}, "takeovers": {0, 0, 1}, "refusals": {0, 0, 1}, "expired": {0, 0, 0}}
		for name, w := range want {
			if got := v.Series[name]; !equal(got, w) {
				t.Errorf("series %s = %v, want %v", name, got, w)
			}
		}
		if got := v.ByTool["render"]["created"]; !equal(got, []int64{0, 0, 4}) {
			t.Errorf("render created %v", got)
		}
		if got := v.ByTool[""]["cancelled"]; !equal(got, []int64{0, 0, 1}) {
			t.Errorf("cancelled with no tool known %v", got)
		}
		d := v.Depth["default"]
		if len(d) != 3 || d[0] != nil || d[2] == nil || *d[2] != 4 {
			t.Errorf("depth %v", d)
		}
		if p := v.Latency["pickupP50Ms"]; p[2] == nil || *p[2] != 50 || p[1] != nil {
			t.Errorf("pickup p50 %v, want 50 ms (the bucket of 20 ms) in the last minute", p)
		}
		if p := v.Latency["durationP99Ms"]; p[2] == nil || *p[2] != 60_000 {
			t.Errorf("duration p99 %v, want the 60 s bucket", p)
		}
		if r := v.Rates.CreatedPerSec; r != 5.0/60 {
			t.Errorf("created per second %v", r)
		}
		if len(v.Billing) != 1 || v.Billing[0] != (series.ToolBilling{Tool: "render", Reserved: 600, Charged: 150, Released: 50, Refused: 1}) {
			t.Errorf("billing %+v", v.Billing)
		}
		ttl, err := b.Client.PTTL(ctx, series.Keys{Prefix: b.Prefix}.Minute(now.Unix()/60)).Result()
		if err != nil || ttl <= 0 {
			t.Errorf("minute hash TTL %v %v: want one", ttl, err)
		}
	})
}

// TestFailedFlushKeeps: counts a flush could not write go out with the next.
func TestFailedFlushKeeps(t *testing.T) {
	b := redistest.Mini(t)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer down.Close()
	r := series.NewRecorder(down, b.Prefix, clock)
	r.Created("render")
	if err := r.Flush(ctx); err == nil {
		t.Fatal("flush to a closed port succeeded")
	}
	// The same recorder's numbers, moved onto a live Redis, are all there.
	if err := series.Move(r, b.Client).Flush(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := series.Read(ctx, b.Client, b.Prefix, now, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Series["created"]; !equal(got, []int64{1}) {
		t.Errorf("created after the failed flush %v, want [1]", got)
	}
}

// TestNilRecorder: a process without a recorder counts nothing and fails nothing.
func TestNilRecorder(t *testing.T) {
	var r *series.Recorder
	r.Created("x")
	r.Ended("x", "completed", time.Second)
	r.Depth("q", 1)
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkRecorderTask is what one task costs the process on its path:
// a create, a claim with its pickup time and an end with its duration
// counted in memory (no Redis command; Flush writes them once a second).
func BenchmarkRecorderTask(b *testing.B) {
	r := series.NewRecorder(nil, "bench:", nil)
	b.ReportAllocs()
	for b.Loop() {
		r.Created("render_video")
		r.Claimed(40 * time.Millisecond)
		r.Ended("render_video", "completed", 3*time.Second)
	}
}
