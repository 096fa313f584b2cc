package main

import (
	"context"
	"fmt"
	"time"
)

// Continuous churn (--churn N, issue 25 item 6): from the middle of the
// load phase, a random worker is SIGKILLed every 2 to 5 s, N times (each
// restarted after --restart-delay). A task taken back from a killed worker
// should run next in its queue: the check measures, for every takeover
// (the take-back script's fence), the time to the next claim of the task.

// churnClaimMax is the target from a takeover's fence to the task's claim.
const churnClaimMax = 5 * time.Second

// churnStep is the churn as one scheduled step.
func (d *driver) churnStep() step {
	return step{0.30, fmt.Sprintf("churn: %d worker SIGKILLs", d.cfg.churn), func(ctx context.Context) {
		for i := range d.cfg.churn {
			if i > 0 {
				sleep(ctx, time.Duration(2000+d.rand(3001))*time.Millisecond)
			}
			if ctx.Err() != nil {
				return
			}
			w := d.rand(len(d.workers))
			if !d.workers[w].alive() || d.workers[w].isPaused() {
				continue // still restarting, or stopped by another fault
			}
			d.killWorker(ctx, w)
		}
	}}
}

// claimAfterFenceCheck: for each takeover, from its fence to the task's
// next claim; a task that ended (a cancel) before any claim is left out.
func (d *driver) claimAfterFenceCheck() check {
	var times []time.Duration
	var late []string
	for id, o := range d.obs.tasks {
		for _, f := range o.fences {
			took := time.Duration(-1)
			for _, s := range o.starts {
				if s.After(f) {
					took = s.Sub(f)
					break
				}
			}
			switch {
			case took >= 0:
				times = append(times, took)
				if took > churnClaimMax {
					late = append(late, fmt.Sprintf("%s claimed %s after its fence", id, took.Round(time.Millisecond)))
				}
			case len(o.endings) == 0:
				late = append(late, id+" never claimed after its fence")
			}
		}
	}
	med, mx := stats(times)
	return check{"claimed after takeover", fmt.Sprintf("%d takeovers, fence to claim: median %s, max %s; %d over %s or never%s",
		len(times), med, mx, len(late), churnClaimMax, examples(late)), len(times) > 0 && len(late) == 0}
}
