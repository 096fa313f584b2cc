package main

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"
)

// step is one scheduled fault: at a share of the load phase.
type step struct {
	share float64
	name  string
	do    func(ctx context.Context)
}

// schedule is the fault plan. The short variant has each fault kind once;
// the full run adds a second worker kill and a second front-end kill. The
// Redis restart comes after the stopped worker is continued (parseFlags
// keeps --pause within the gap), so every in-flight task at the restart
// has a running worker.
func (d *driver) schedule() []step {
	sig := syscall.SIGTERM
	if d.cfg.redisStopWith == "KILL" {
		sig = syscall.SIGKILL
	}
	if d.cfg.redisFaults {
		return d.redisSchedule(sig)
	}
	s := []step{
		{0.10, "SIGKILL a worker", func(ctx context.Context) { d.killWorker(ctx, d.busiest()) }},
		{0.20, "SIGSTOP a worker", func(ctx context.Context) { d.pauseWorker(ctx, d.busiest()) }},
		{0.45, "SIGKILL frontend1", func(ctx context.Context) { d.killFrontend(ctx, 0) }},
		{0.68, "Redis restart", func(ctx context.Context) { d.restartRedis(ctx, sig) }},
	}
	if d.cfg.churn > 0 {
		// The churn replaces the worker faults of the full run: SIGKILLs
		// enough, and a SIGSTOPped worker would be killed too.
		return append([]step{d.churnStep()}, s[2], s[3])
	}
	if !d.cfg.short {
		s = append(s,
			step{0.78, "SIGKILL a worker", func(ctx context.Context) { d.killWorker(ctx, d.busiest()) }},
			step{0.88, "SIGKILL frontend2", func(ctx context.Context) { d.killFrontend(ctx, 1) }})
	}
	return s
}

// busiest is the running (not stopped) worker that holds the most
// unfinished tasks, so a fault always catches some and the takeover check
// has something to measure (the first such worker on a tie or when none
// holds any).
func (d *driver) busiest() int {
	best, most := -1, -1
	for i, w := range d.workers {
		if !w.alive() || w.isPaused() {
			continue
		}
		if n := len(d.held(w.pid())); n > most {
			best, most = i, n
		}
	}
	return max(best, 0)
}

// drive creates tasks and injects the faults for the load phase, then
// waits (until the end of --duration) for every task to end.
func (d *driver) drive(ctx context.Context) error {
	load := time.Duration(float64(d.cfg.duration) * d.cfg.loadShare)
	loadEnd, end := d.start.Add(load), d.end
	runCtx, cancel := context.WithDeadline(ctx, end.Add(30*time.Second))
	defer cancel()
	listenCtx, stopListen := context.WithDeadline(runCtx, end)
	defer stopListen()

	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		for _, s := range d.schedule() {
			at := d.start.Add(time.Duration(float64(load) * s.share))
			select {
			case <-time.After(time.Until(at)):
			case <-runCtx.Done():
				return
			}
			s.do(runCtx)
		}
	}()

	var creates sync.WaitGroup
	sem := make(chan struct{}, 8)
	tick := time.NewTicker(time.Duration(float64(time.Second) / d.cfg.rate))
	defer tick.Stop()
	batch := time.NewTicker(3 * time.Second)
	defer batch.Stop()
	followed := 0
	startFollow := func() {
		d.mu.Lock()
		var ids []string
		for _, t := range d.tasks[followed:] {
			if t.follow {
				ids = append(ids, t.id)
			}
		}
		followed = len(d.tasks)
		d.mu.Unlock()
		if len(ids) > 0 {
			d.wg.Add(1)
			go func() { defer d.wg.Done(); d.follow(listenCtx, ids) }()
		}
	}
loadLoop:
	for time.Now().Before(loadEnd) {
		select {
		case <-tick.C:
			select {
			case sem <- struct{}{}:
				creates.Add(1)
				go func() {
					defer creates.Done()
					defer func() { <-sem }()
					cctx, ccancel := context.WithTimeout(runCtx, 20*time.Second)
					defer ccancel()
					d.create(cctx, runCtx)
				}()
			default:
				d.countCreateErr("not sent: 8 creates already waiting")
			}
		case <-batch.C:
			startFollow()
		case err := <-d.fatalErr:
			return err
		case <-runCtx.Done():
			break loadLoop
		}
	}
	creates.Wait()
	startFollow()
	select {
	case <-faultsDone:
	case err := <-d.fatalErr:
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted: %w", err)
	}
	d.logf("load done: %d tasks created; waiting up to %s for all to end", len(d.snapshot()), time.Until(end).Round(time.Second))
	last := time.Now()
	for time.Now().Before(end) {
		open := d.unended()
		if open == 0 {
			break
		}
		if time.Since(last) > 10*time.Second {
			d.logf("%d tasks not ended yet", open)
			last = time.Now()
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case err := <-d.fatalErr:
			return err
		case <-ctx.Done():
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
	}
	stopListen()
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("driver goroutines did not finish within 30s of the end")
	}
	return nil
}

// snapshot is the created tasks so far.
func (d *driver) snapshot() []*tk {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*tk(nil), d.tasks...)
}

// unended counts created tasks the monitor has not seen end.
func (d *driver) unended() int {
	ts := d.snapshot()
	d.obs.mu.Lock()
	defer d.obs.mu.Unlock()
	n := 0
	for _, t := range ts {
		if o := d.obs.tasks[t.id]; o == nil || len(o.endings) == 0 {
			n++
		}
	}
	return n
}
