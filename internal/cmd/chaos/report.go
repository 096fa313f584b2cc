package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/internal/toolpack/chaos"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// check is one report line with a target.
type check struct {
	name, detail string
	ok           bool
}

// report is what a run found.
type report struct {
	header []string // run description and fault timeline
	facts  []string // lines without a target
	checks []check
}

func (r *report) pass() bool {
	for _, c := range r.checks {
		if !c.ok {
			return false
		}
	}
	return true
}

func (r *report) String() string {
	var b strings.Builder
	for _, h := range r.header {
		b.WriteString(h + "\n")
	}
	for _, f := range r.facts {
		b.WriteString(f + "\n")
	}
	failed := 0
	for _, c := range r.checks {
		verdict := "PASS"
		if !c.ok {
			verdict, failed = "FAIL", failed+1
		}
		fmt.Fprintf(&b, "%s  %-22s %s\n", verdict, c.name, c.detail)
	}
	if failed == 0 {
		b.WriteString("RESULT: PASS\n")
	} else {
		fmt.Fprintf(&b, "RESULT: FAIL (%d of %d checks)\n", failed, len(r.checks))
	}
	return b.String()
}

// final is a task's state as tasks/get answered it at the end.
type final struct {
	got     *proto.GetTaskResult
	unknown bool
	err     error
}

// finals reads every task with tasks/get (8 at a time), retrying through
// transient errors for up to 20 s each.
func (d *driver) finals(ctx context.Context, ts []*tk) map[string]final {
	out := make(map[string]final, len(ts))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, t := range ts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var f final
			deadline := time.Now().Add(20 * time.Second)
			for {
				var got *proto.GetTaskResult
				err := d.do(func(c *client.Client) (err error) { got, err = c.GetTask(ctx, t.id); return err })
				f = final{got: got, err: err, unknown: unknown(err)}
				if err == nil || !retryable(err) || time.Now().After(deadline) || ctx.Err() != nil {
					break
				}
				sleep(ctx, 300*time.Millisecond)
			}
			mu.Lock()
			out[t.id] = f
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// wrong says why a terminal task's outcome is not what its arguments give,
// or "" when it is right.
func wrong(t *tk, g *proto.GetTaskResult) string {
	text := func() string {
		var r proto.CallToolResult
		if json.Unmarshal(g.Result, &r) != nil || len(r.Content) != 1 || r.IsError {
			return "undecodable or error result " + truncate(string(g.Result), 100)
		}
		return r.Content[0].Text
	}
	switch {
	case g.Status == proto.StatusCancelled:
		return ""
	case t.tool == "chaos_fail":
		if g.Status != proto.StatusFailed || g.Error == nil || g.Error.Message != chaos.FailMessage {
			return fmt.Sprintf("chaos_fail ended %s (%v)", g.Status, g.Error)
		}
	case g.Status != proto.StatusCompleted:
		return "" // an unexpected failure: listed, not a wrong result
	case t.tool == "chaos_instant":
		if got := text(); got != chaos.InstantResult(t.seed) {
			return fmt.Sprintf("chaos_instant result %q", got)
		}
	case t.tool == "chaos_tree":
		if got := text(); strings.TrimSpace(got) != chaos.TreeResult(t.steps) {
			return fmt.Sprintf("chaos_tree result %q, want %q", got, chaos.TreeResult(t.steps))
		}
	case t.tool == "chaos_steps":
		if got, want := text(), chaos.StepsResult(t.steps, t.seed); got != want {
			return fmt.Sprintf("chaos_steps result %q, want %q", got, want)
		}
	}
	return ""
}

// report checks the invariants on what the run observed.
func (d *driver) report(ctx context.Context) *report {
	ts := d.snapshot()
	fin := d.finals(ctx, ts)
	d.monitorExpected.Store(true)
	d.obs.mu.Lock()
	defer d.obs.mu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	r := &report{}
	c := d.cfg
	r.header = append(r.header,
		fmt.Sprintf("mcpq chaos report: %s, %s (load %s), seed %d, %d front ends, %d workers, redis-server AOF fsync always",
			variant(c), c.duration, time.Duration(float64(c.duration)*c.loadShare).Round(time.Second), c.seed, c.frontends, c.workers),
		fmt.Sprintf("worker flags: %q; SIGSTOP %s; fault cancels %s after the fault; targets: takeover median < %s, max < %s; cancel < %s; Redis resume < %s",
			c.workerArgs, c.pause, c.faultCancelAfter, c.takeoverMed, c.takeoverMax, c.cancelMax, c.resumeMax))
	for _, f := range d.faults {
		r.header = append(r.header, fmt.Sprintf("fault at %6.1fs: %s%s", f.at.Sub(d.start).Seconds(), f.what, f.heldText()))
	}

	// Created, terminal, lost, wrong.
	byStatus := map[proto.TaskStatus]int{}
	var lost, wrongs, unexpected []string
	terminal := 0
	for _, t := range ts {
		f := fin[t.id]
		switch {
		case f.unknown:
			lost = append(lost, t.id+" unknown to tasks/get")
		case f.err != nil:
			lost = append(lost, fmt.Sprintf("%s unreadable: %v", t.id, f.err))
		case !f.got.Status.Terminal():
			lost = append(lost, fmt.Sprintf("%s never terminal (%s, %q)", t.id, f.got.Status, f.got.StatusMessage))
		default:
			terminal++
			byStatus[f.got.Status]++
			if w := wrong(t, f.got); w != "" {
				wrongs = append(wrongs, t.id+": "+w)
			} else if f.got.Status == proto.StatusFailed && t.tool != "chaos_fail" {
				unexpected = append(unexpected, fmt.Sprintf("%s %s: %v", t.tool, t.id, f.got.Error))
			}
		}
	}
	unacked := 0
	for _, n := range d.createErrs {
		unacked += n
	}
	r.facts = append(r.facts, fmt.Sprintf("created   %d acknowledged (%d creates not acknowledged)", len(ts), unacked))
	for what, n := range d.createErrs {
		r.facts = append(r.facts, fmt.Sprintf("          not acknowledged %dx: %s", n, what))
	}
	r.facts = append(r.facts, fmt.Sprintf("terminal  %d: completed %d, failed %d (%d unexpected), cancelled %d",
		terminal, byStatus[proto.StatusCompleted], byStatus[proto.StatusFailed], len(unexpected), byStatus[proto.StatusCancelled]))
	r.facts = append(r.facts, listSome("          unexpected failure", unexpected)...)
	r.checks = append(r.checks, check{"lost", fmt.Sprintf("%d%s", len(lost), examples(lost)), len(lost) == 0})
	r.checks = append(r.checks, check{"wrong results", fmt.Sprintf("%d%s", len(wrongs), examples(wrongs)), len(wrongs) == 0})
	if c.queueShards > 1 {
		r.checks = append(r.checks, d.shardsCheck(ctx))
	}

	// Duplicate terminal transitions and overlapping attempts.
	var dups, overlaps []string
	for _, t := range ts {
		o := d.obs.tasks[t.id]
		if o == nil {
			continue
		}
		if len(o.endings) > 1 {
			var s []string
			for _, e := range o.endings {
				s = append(s, e.status)
			}
			dups = append(dups, t.id+" ended "+strings.Join(s, ", then "))
		}
		for _, ov := range o.overlaps {
			overlaps = append(overlaps, t.id+": "+ov)
		}
	}
	r.checks = append(r.checks, check{"duplicate terminal", fmt.Sprintf("%d%s", len(dups), examples(dups)), len(dups) == 0})
	coverage := "the monitor saw every script write"
	if len(d.obs.gaps) > 0 {
		coverage = "INCOMPLETE: " + strings.Join(d.obs.gaps, "; ")
	}
	r.checks = append(r.checks, check{"overlapping attempts",
		fmt.Sprintf("%d (%s)%s", len(overlaps), coverage, examples(overlaps)), len(overlaps) == 0 && len(d.obs.gaps) == 0})

	if c.commandTools {
		r.checks = append(r.checks, d.treeChecks()...)
	}
	if c.redisFaults {
		r.checks = append(r.checks, d.cancelCheck(ts)...)
		r.checks = append(r.checks, d.listenCheck())
		r.checks = append(r.checks, d.redisChecks()...)
		return r
	}
	r.checks = append(r.checks, d.takeoverCheck())
	if c.churn > 0 {
		r.checks = append(r.checks, d.claimAfterFenceCheck())
	}
	r.checks = append(r.checks, d.cancelCheck(ts)...)
	r.checks = append(r.checks, d.listenCheck())
	r.checks = append(r.checks, d.resumeCheck())
	return r
}

// takeoverCheck: from a worker's SIGKILL or SIGSTOP to each task it held
// being claimed by a newer attempt. Tasks cancelled meanwhile are not
// taken over by design and are left out; any other task not claimed again
// by the end counts as not taken over.
func (d *driver) takeoverCheck() check {
	var times []time.Duration
	var missed []string
	cancelled := 0
	for _, f := range d.faults {
		if !f.worker {
			continue
		}
		for _, h := range f.held {
			o := d.obs.tasks[h.id]
			took := time.Duration(-1)
			for _, cl := range o.claims {
				if cl.attempt > h.attempt && !cl.at.Before(f.at) {
					took = cl.at.Sub(f.at)
					break
				}
			}
			switch {
			case took >= 0:
				times = append(times, took)
			case len(o.endings) > 0 && o.endings[0].status == "cancelled":
				cancelled++
			case len(o.endings) > 0:
				missed = append(missed, fmt.Sprintf("%s ended %s by attempt %d without a takeover", h.id, o.endings[0].status, h.attempt))
			default:
				missed = append(missed, h.id+" not claimed again by the end")
			}
		}
	}
	med, mx := stats(times)
	ok := len(times) > 0 && len(missed) == 0 && med < d.cfg.takeoverMed && mx < d.cfg.takeoverMax
	detail := fmt.Sprintf("%d taken over, median %s, max %s; %d not taken over; %d cancelled instead%s",
		len(times), med, mx, len(missed), cancelled, examples(missed))
	if len(times) == 0 && len(missed) == 0 {
		detail = "nothing measured: no faulted worker held a task"
	}
	return check{"takeover", detail, ok}
}

// cancelCheck: for every cancel acknowledged on a task that had not ended
// (Redis ran its cancel request before any ending), the time from the
// acknowledgement to "cancelled"; and every such task that ended otherwise.
func (d *driver) cancelCheck(ts []*tk) []check {
	var times []time.Duration
	var late, otherwise []string
	deadOrStopped, afterEnd := 0, 0
	for _, t := range ts {
		t.mu.Lock()
		ack, why := t.cancelAck, t.cancelWhy
		t.mu.Unlock()
		o := d.obs.tasks[t.id]
		if ack.IsZero() || o == nil {
			continue
		}
		if o.cancelReq.IsZero() || (len(o.endings) > 0 && o.endings[0].at.Before(o.cancelReq)) {
			afterEnd++
			continue
		}
		if why != "random" {
			deadOrStopped++
		}
		switch {
		case len(o.endings) == 0:
			late = append(late, fmt.Sprintf("%s (%s) never ended", t.id, why))
		case o.endings[0].status != "cancelled":
			otherwise = append(otherwise, fmt.Sprintf("%s (%s) ended %s after the cancel", t.id, why, o.endings[0].status))
		default:
			took := max(0, o.endings[0].at.Sub(ack))
			times = append(times, took)
			if took > d.cfg.cancelMax {
				late = append(late, fmt.Sprintf("%s (%s) cancelled after %s", t.id, why, took.Round(time.Millisecond)))
			}
		}
	}
	med, mx := stats(times)
	return []check{
		{"cancel to cancelled", fmt.Sprintf("%d cancelled (%d of live tasks whose worker was dead or stopped), median %s, max %s; %d over %s or never%s; %d cancels came after the end",
			len(times), deadOrStopped, med, mx, len(late), d.cfg.cancelMax, examples(late), afterEnd), len(times) > 0 && len(late) == 0},
		{"completed after cancel", fmt.Sprintf("%d%s", len(otherwise), examples(otherwise)), len(otherwise) == 0},
	}
}

// listenCheck: a notification whose state equals the previous one for that
// task on the same stream is a duplicate.
func (d *driver) listenCheck() check {
	l := &d.listen
	l.mu.Lock()
	defer l.mu.Unlock()
	detail := fmt.Sprintf("%d duplicates in %d notifications on %d streams (%d reopened after a front end died)%s",
		l.duplicates, l.notifications, l.streams, l.reopens, examples(l.examples))
	return check{"duplicate notifications", detail, l.notifications > 0 && l.duplicates == 0}
}

// resumeCheck: tasks a running worker held when Redis went down, from
// Redis answering again to their next worker write (heartbeat, progress,
// checkpoint or ending).
func (d *driver) resumeCheck() check {
	rr := d.redisRestart
	if rr == nil {
		return check{"Redis resume", "Redis was not restarted", false}
	}
	var times []time.Duration
	var late []string
	for _, h := range rr.inFlight {
		o := d.obs.tasks[h.id]
		took := time.Duration(-1)
		for _, w := range o.writes {
			if !w.Before(rr.up) {
				took = w.Sub(rr.up)
				break
			}
		}
		if took < 0 {
			late = append(late, h.id+" never wrote again")
			continue
		}
		times = append(times, took)
		if took > d.cfg.resumeMax {
			late = append(late, fmt.Sprintf("%s after %s", h.id, took.Round(time.Millisecond)))
		}
	}
	med, mx := stats(times)
	detail := fmt.Sprintf("%d in flight, resumed: median %s, max %s; %d over %s or never%s",
		len(rr.inFlight), med, mx, len(late), d.cfg.resumeMax, examples(late))
	return check{"Redis resume", detail, len(rr.inFlight) > 0 && len(late) == 0}
}

// stats is the median and maximum, rounded for the report.
func stats(ds []time.Duration) (med, mx time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med.Round(10 * time.Millisecond), s[len(s)-1].Round(10 * time.Millisecond)
}

// examples shows the first few items of a list of problems.
func examples(items []string) string {
	if len(items) == 0 {
		return ""
	}
	n := min(3, len(items))
	s := "; e.g. " + strings.Join(items[:n], "; ")
	if len(items) > n {
		s += fmt.Sprintf("; and %d more", len(items)-n)
	}
	return s
}

func listSome(prefix string, items []string) []string {
	var out []string
	for i, it := range items {
		if i == 5 {
			out = append(out, fmt.Sprintf("%s: and %d more", prefix, len(items)-5))
			break
		}
		out = append(out, prefix+": "+it)
	}
	return out
}

// shardsCheck: with --queue-shards N, the jobs went to N asynq queues of
// the tools' queue (asynq:queues names every queue a job was put on), so
// the run's checks covered a sharded queue, not a plain one.
func (d *driver) shardsCheck(ctx context.Context) check {
	all, err := d.admin.SMembers(ctx, "asynq:queues").Result()
	if err != nil {
		return check{"queue shards", "asynq:queues unreadable: " + err.Error(), false}
	}
	plain := d.prefix + worker.DefaultQueue
	var shards []string
	for _, q := range all {
		if q == plain || strings.HasPrefix(q, plain+queue.ShardSep) {
			shards = append(shards, q)
		}
	}
	sort.Strings(shards)
	return check{"queue shards", fmt.Sprintf("%d of %d took jobs: %s", len(shards), d.cfg.queueShards, strings.Join(shards, " ")),
		len(shards) == d.cfg.queueShards}
}
