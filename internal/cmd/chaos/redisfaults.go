package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"time"

	"github.com/mcpq/mcpq/client"
)

// The Redis run (--redis-faults, issue 25 items 1 and 9): Redis is frozen
// (SIGSTOP) for --redis-pause under running tasks, and later restarted, while
// every worker lives. Nothing may be taken from a live worker, the tasks in
// flight end within their remaining run time plus 5 s of Redis returning,
// and requests during the freeze answer 503 within 3 s.

// frozenBound is how soon a request must be answered while Redis is frozen.
const frozenBound = 3 * time.Second

// redisPause is the freeze and what happened during it.
type redisPause struct {
	down, up time.Time
	inFlight []hold
	probes   []probe
}

// probe is one request sent while Redis was frozen.
type probe struct {
	took   time.Duration
	status int // HTTP status (0: no answer)
	err    string
}

// redisSchedule is the Redis run's fault plan: the freeze, then the restart.
func (d *driver) redisSchedule(sig syscall.Signal) []step {
	return []step{
		{0.25, fmt.Sprintf("Redis SIGSTOP %s", d.cfg.redisPause), func(ctx context.Context) { d.pauseRedis(ctx) }},
		{0.75, "Redis restart", func(ctx context.Context) { d.restartRedis(ctx, sig) }},
	}
}

// inFlight lists the tasks the running workers hold.
func (d *driver) inFlight() []hold {
	var out []hold
	for _, w := range d.workers {
		if w.alive() && !w.isPaused() {
			out = append(out, d.held(w.pid())...)
		}
	}
	return out
}

// pauseRedis SIGSTOPs redis-server for --redis-pause, sends a tasks/get
// to each front end every second meanwhile, then SIGCONTs it.
func (d *driver) pauseRedis(ctx context.Context) {
	p := &redisPause{inFlight: d.inFlight(), down: time.Now()}
	_ = d.redis.signal(syscall.SIGSTOP)
	probeEnd := p.down.Add(d.cfg.redisPause - frozenBound - time.Second)
	ids := d.snapshot()
	for i := 0; time.Now().Before(probeEnd) && ctx.Err() == nil && len(ids) > 0; i++ {
		c := d.clients[i%len(d.clients)]
		p.probes = append(p.probes, sendProbe(ctx, c, ids[i%len(ids)].id))
		sleep(ctx, time.Second)
	}
	sleep(ctx, time.Until(p.down.Add(d.cfg.redisPause)))
	_ = d.redis.signal(syscall.SIGCONT)
	p.up = time.Now()
	d.mu.Lock()
	d.redisPause = p
	d.mu.Unlock()
	d.addFault(fault{what: fmt.Sprintf("Redis SIGSTOP for %s, %d requests sent meanwhile", p.up.Sub(p.down).Round(time.Millisecond), len(p.probes)),
		at: p.down, held: p.inFlight})
}

// sendProbe times one tasks/get.
func sendProbe(ctx context.Context, c *client.Client, id string) probe {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.GetTask(ctx, id)
	p := probe{took: time.Since(start), status: http.StatusOK}
	var rpc *client.RPCError
	var he *client.HTTPError
	switch {
	case err == nil:
	case errors.As(err, &rpc):
		p.status = rpc.HTTPStatus
	case errors.As(err, &he):
		p.status = he.Status
	default:
		p.status, p.err = 0, err.Error()
	}
	return p
}

// redisChecks are the Redis run's checks, in place of the worker-fault
// ones (no worker is killed or stopped in it).
func (d *driver) redisChecks() []check {
	return []check{d.liveTakeoverCheck(), d.pauseEndCheck(), d.frozenCheck(), d.resumeCheck()}
}

// liveTakeoverCheck: with every worker alive, no task may be claimed by a
// second attempt (a takeover, or a second delivery asynq made after losing
// its lease during the freeze).
func (d *driver) liveTakeoverCheck() check {
	var taken []string
	for id, o := range d.obs.tasks {
		for _, cl := range o.claims {
			if cl.attempt > 1 {
				taken = append(taken, fmt.Sprintf("%s claimed by attempt %d at %.1fs", id, cl.attempt, cl.at.Sub(d.start).Seconds()))
				break
			}
		}
	}
	return check{"taken from live workers", fmt.Sprintf("%d%s", len(taken), examples(taken)), len(taken) == 0}
}

// pauseEndCheck: each chaos_steps task a running worker held at the freeze
// ends within its remaining run time (its nominal time less what it had
// run before the freeze) plus 5 s of Redis returning.
func (d *driver) pauseEndCheck() check {
	p := d.redisPause
	if p == nil {
		return check{"ended after the freeze", "Redis was not frozen", false}
	}
	var over []string
	var slack []time.Duration
	n := 0
	for _, h := range p.inFlight {
		t, o := d.byID[h.id], d.obs.tasks[h.id]
		if t == nil || o == nil || t.tool != "chaos_steps" {
			continue
		}
		var claimed time.Time
		for _, cl := range o.claims {
			if cl.attempt == h.attempt {
				claimed = cl.at
			}
		}
		if claimed.IsZero() || len(o.endings) == 0 {
			over = append(over, h.id+" never ended")
			continue
		}
		if o.endings[0].status == "cancelled" {
			continue
		}
		n++
		remaining := max(0, claimed.Add(time.Duration(t.steps*t.stepMs)*time.Millisecond).Sub(p.down))
		after := o.endings[0].at.Sub(p.up)
		slack = append(slack, after-remaining)
		if after > remaining+5*time.Second {
			over = append(over, fmt.Sprintf("%s ended %s after Redis returned, %s left to run", h.id, after.Round(time.Millisecond), remaining.Round(time.Millisecond)))
		}
	}
	med, mx := stats(slack)
	detail := fmt.Sprintf("%d in flight at the freeze; end minus remaining run time after Redis returned: median %s, max %s; %d over 5 s%s",
		n, med, mx, len(over), examples(over))
	return check{"ended after the freeze", detail, n > 0 && len(over) == 0}
}

// frozenCheck: every request during the freeze answered 503 within 3 s.
func (d *driver) frozenCheck() check {
	p := d.redisPause
	if p == nil || len(p.probes) == 0 {
		return check{"503 while frozen", "no request sent while Redis was frozen", false}
	}
	var bad []string
	var took []time.Duration
	for _, pr := range p.probes {
		took = append(took, pr.took)
		if pr.status != http.StatusServiceUnavailable || pr.took > frozenBound {
			bad = append(bad, fmt.Sprintf("HTTP %d after %s %s", pr.status, pr.took.Round(time.Millisecond), pr.err))
		}
	}
	med, mx := stats(took)
	return check{"503 while frozen", fmt.Sprintf("%d requests: median %s, max %s; %d not 503 within %s%s",
		len(p.probes), med, mx, len(bad), frozenBound, examples(bad)), len(bad) == 0}
}
