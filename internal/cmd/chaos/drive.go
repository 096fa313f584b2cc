package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/internal/toolpack/chaos"
	"github.com/mcpq/mcpq/proto"
)

// tk is one task the driver created and got a CreateTaskResult for.
type tk struct {
	id, tool      string
	steps, stepMs int
	seed          int64
	created       time.Time
	follow        bool

	mu        sync.Mutex
	cancelled bool      // a cancel was sent
	cancelAck time.Time // when tasks/cancel was acknowledged
	cancelWhy string
}

// hold is a task a worker held when a fault hit it.
type hold struct {
	id      string
	attempt int64
}

// fault is one fault the driver injected.
type fault struct {
	what   string
	at     time.Time
	worker bool // a worker was killed or stopped: its held tasks are taken over
	held   []hold
	note   string
}

// heldText says how many tasks the fault caught.
func (f fault) heldText() string {
	switch {
	case f.worker:
		return fmt.Sprintf("; it held %d tasks", len(f.held))
	case len(f.held) > 0:
		return fmt.Sprintf("; %d tasks in flight", len(f.held))
	}
	return ""
}

// redisRestart is the Redis restart and the tasks in flight at it.
type redisRestart struct {
	down, up time.Time
	inFlight []hold
}

// listenStats counts what the listen streams saw.
type listenStats struct {
	mu            sync.Mutex
	streams       int
	notifications int
	duplicates    int
	examples      []string
	reopens       int
}

// pick returns the next front end's client in turn.
func (d *driver) pick(listen bool) *client.Client {
	i := int(d.rr.Add(1)) % len(d.clients)
	if listen {
		return d.listeners[i]
	}
	return d.clients[i]
}

// do runs fn on one front end, and on the other when the first could not
// be reached or answered with an HTTP 5xx (killed, restarting, Redis away).
func (d *driver) do(fn func(c *client.Client) error) error {
	var err error
	first := int(d.rr.Add(1))
	for k := range len(d.clients) {
		if err = fn(d.clients[(first+k)%len(d.clients)]); err == nil || !retryable(err) {
			return err
		}
	}
	return err
}

// retryable: the request may have failed for the fault, not for itself.
func retryable(err error) bool {
	var re *client.RPCError
	if errors.As(err, &re) {
		return re.HTTPStatus >= 500
	}
	return true
}

// unknown reports a -32602 answer: what tasks/get says for an unknown id.
func unknown(err error) bool {
	var re *client.RPCError
	return errors.As(err, &re) && re.RPC.Code == proto.CodeInvalidParams
}

func (d *driver) rand(n int) int {
	d.rngMu.Lock()
	defer d.rngMu.Unlock()
	return d.rng.IntN(n)
}

// create starts one task of the mix within ctx; its random cancel, if
// any, is sent within runCtx (ctx ends when create returns, which before
// this made every random cancel a no-op).
func (d *driver) create(ctx, runCtx context.Context) {
	t := &tk{seed: int64(d.rand(1_000_000))}
	args := map[string]any{"seed": t.seed}
	switch r := d.rand(100); {
	case r < 15:
		t.tool = "chaos_instant"
	case r < 25:
		t.tool = "chaos_fail"
	case r < 55: // long: in flight when faults hit
		t.tool, t.steps, t.stepMs = "chaos_steps", 20+d.rand(21), 500+d.rand(301)
	case r >= 85 && d.cfg.commandTools:
		t.tool, t.steps, t.stepMs = "chaos_tree", 4+d.rand(17), chaos.TreeStepMs
	default:
		t.tool, t.steps, t.stepMs = "chaos_steps", 3+d.rand(13), 200+d.rand(601)
	}
	if t.tool == "chaos_steps" || t.tool == "chaos_tree" {
		// Every task must be able to end before the run does, even after a
		// takeover: its nominal time fits in what is left minus the
		// takeover target and a margin (near the end: fewer steps, or none).
		budget := time.Until(d.end) - d.cfg.takeoverMax - 5*time.Second
		t.steps = max(0, min(t.steps, int(budget/(time.Duration(t.stepMs)*time.Millisecond))))
		args["steps"], args["stepMs"] = t.steps, t.stepMs
		if t.tool == "chaos_tree" {
			delete(args, "stepMs")
			delete(args, "seed")
		}
	}
	var ans *client.ToolAnswer
	err := d.do(func(c *client.Client) (err error) { ans, err = c.CallTool(ctx, t.tool, args); return err })
	switch {
	case err != nil:
		d.countCreateErr(err.Error())
		return
	case ans.Task == nil:
		d.countCreateErr("answered without a task")
		return
	}
	t.id, t.created = ans.Task.TaskID, time.Now()
	t.follow = d.rand(100) < d.cfg.followPct
	d.mu.Lock()
	d.tasks = append(d.tasks, t)
	d.byID[t.id] = t
	d.mu.Unlock()
	if (t.tool == "chaos_steps" || t.tool == "chaos_tree") && d.rand(100) < d.cfg.cancelPct {
		delay := time.Duration(300+d.rand(4000)) * time.Millisecond
		d.after(runCtx, delay, func() { d.cancel(runCtx, t, "random") })
	}
}

func (d *driver) countCreateErr(what string) {
	if len(what) > 120 {
		what = what[:120]
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.createErrs[what]++
}

// after runs fn after delay in a tracked goroutine, unless ctx ends first.
func (d *driver) after(ctx context.Context, delay time.Duration, fn func()) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		select {
		case <-time.After(delay):
			fn()
		case <-ctx.Done():
		}
	}()
}

// cancel sends tasks/cancel for t once, retrying through faults for up to
// 15 s, and records when it was acknowledged.
func (d *driver) cancel(ctx context.Context, t *tk, why string) {
	t.mu.Lock()
	if t.cancelled {
		t.mu.Unlock()
		return
	}
	t.cancelled, t.cancelWhy = true, why
	t.mu.Unlock()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		err := d.do(func(c *client.Client) error { _, err := c.CancelTask(ctx, t.id); return err })
		if err == nil {
			t.mu.Lock()
			t.cancelAck = time.Now()
			t.mu.Unlock()
			return
		}
		if !retryable(err) { // e.g. already ended: not a cancel of a live task
			return
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// held lists the unfinished tasks whose current attempt is worker pid's.
func (d *driver) held(pid int) []hold {
	d.obs.mu.Lock()
	defer d.obs.mu.Unlock()
	var out []hold
	for id, o := range d.obs.tasks {
		if len(o.endings) == 0 && o.attempt > 0 && o.pid[o.attempt] == pid {
			out = append(out, hold{id, o.attempt})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// cancelSome cancels up to half (at most 3) of the chaos_steps tasks in hs:
// cancels of tasks whose worker is dead or stopped. A killed worker's half
// rounds down and a stopped worker's up, so with one task held by each
// (the short run) the takeover check still has the killed worker's task and
// the cancel check the stopped worker's.
func (d *driver) cancelSome(ctx context.Context, hs []hold, why string, roundUp bool) {
	most := len(hs) / 2
	if roundUp {
		most = (len(hs) + 1) / 2
	}
	n := 0
	for _, h := range hs {
		d.mu.Lock()
		t := d.byID[h.id]
		d.mu.Unlock()
		if t == nil || t.tool != "chaos_steps" || n >= min(3, most) {
			continue
		}
		n++
		d.wg.Add(1)
		go func() { defer d.wg.Done(); d.cancel(ctx, t, why) }()
	}
}

// killWorker SIGKILLs worker i and restarts it after the restart delay.
func (d *driver) killWorker(ctx context.Context, i int) {
	w := d.workers[i]
	pid := w.pid()
	held := d.held(pid)
	at := time.Now()
	_ = w.signal(syscall.SIGKILL)
	w.wait(10 * time.Second)
	d.addFault(fault{what: fmt.Sprintf("SIGKILL %s (pid %d)", w.name, pid), at: at, worker: true, held: held})
	d.after(ctx, d.cfg.faultCancelAfter, func() { d.cancelSome(ctx, held, "worker dead", false) })
	d.after(ctx, d.cfg.restartDelay, func() { d.restart(w) })
}

// pauseWorker SIGSTOPs worker i for the pause, then SIGCONTs it.
func (d *driver) pauseWorker(ctx context.Context, i int) {
	w := d.workers[i]
	pid := w.pid()
	held := d.held(pid)
	at := time.Now()
	_ = w.signal(syscall.SIGSTOP)
	d.addFault(fault{what: fmt.Sprintf("SIGSTOP %s (pid %d) for %s", w.name, pid, d.cfg.pause), at: at, worker: true, held: held})
	d.after(ctx, d.cfg.faultCancelAfter, func() { d.cancelSome(ctx, held, "worker stopped", true) })
	// SIGCONT even when the run is ending: the cleanup stops it either way.
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		select {
		case <-time.After(d.cfg.pause):
		case <-ctx.Done():
		}
		_ = w.signal(syscall.SIGCONT)
	}()
}

// killFrontend SIGKILLs front end i and restarts it after the restart delay.
func (d *driver) killFrontend(ctx context.Context, i int) {
	f := d.frontends[i]
	pid := f.pid()
	at := time.Now()
	_ = f.signal(syscall.SIGKILL)
	f.wait(10 * time.Second)
	d.addFault(fault{what: fmt.Sprintf("SIGKILL %s (pid %d)", f.name, pid), at: at})
	d.after(ctx, d.cfg.restartDelay, func() {
		d.restart(f)
		if err := waitFor(ctx, f.name+" healthy", 30*time.Second, func() bool { return healthy(d.feBase[i]) }); err != nil {
			d.logf("%v", err)
		}
	})
}

func (d *driver) restart(p *proc) {
	if err := p.start(); err != nil {
		d.logf("restart %s: %v", p.name, err)
	}
}

func (d *driver) addFault(f fault) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = append(d.faults, f)
	d.logf("fault: %s%s", f.what, f.heldText())
}

// restartRedis stops Redis with sig and starts it again on the same port
// and folder (AOF), then re-attaches the monitor.
func (d *driver) restartRedis(ctx context.Context, sig syscall.Signal) {
	r := &redisRestart{inFlight: d.inFlight()} // tasks held by a running worker are in flight
	d.monitorExpected.Store(true)
	r.down = time.Now()
	d.gate.down()
	d.redis.stop(sig, 10*time.Second)
	select { // the old monitor connection has ended before the new one attaches
	case <-d.monitorDone:
	case <-time.After(10 * time.Second):
		d.fatal(errors.New("the monitor's connection outlived Redis"))
		return
	}
	if err := d.redis.start(); err != nil {
		d.fatal(fmt.Errorf("restart redis: %w", err))
		return
	}
	if err := waitFor(ctx, "redis back", 30*time.Second, func() bool { return d.admin.Ping(ctx).Err() == nil }); err != nil {
		d.fatal(err)
		return
	}
	if err := d.attachMonitor(ctx); err != nil {
		d.fatal(err)
		return
	}
	d.gate.open()
	r.up = time.Now() // back for its clients: the gate lets them through
	d.mu.Lock()
	d.redisRestart = r
	d.mu.Unlock()
	d.addFault(fault{what: fmt.Sprintf("Redis restart (SIG%s), back after %s", d.cfg.redisStopWith, r.up.Sub(r.down).Round(time.Millisecond)),
		at: r.down, held: r.inFlight})
}

// follow listens to ids on the front ends until each has ended or ctx
// ends, reopening the stream (on the other front end) when it breaks, and
// counts notifications whose state equals the previous one on that stream.
func (d *driver) follow(ctx context.Context, ids []string) {
	remaining := map[string]bool{}
	for _, id := range ids {
		remaining[id] = true
	}
	for try := 0; try < 30 && len(remaining) > 0 && ctx.Err() == nil; try++ {
		list := make([]string, 0, len(remaining))
		for id := range remaining {
			list = append(list, id)
		}
		lctx, stop := context.WithCancel(ctx)
		l, err := d.pick(true).Listen(lctx, map[string]any{"taskIds": list})
		if err != nil {
			stop()
			sleep(ctx, 500*time.Millisecond)
			continue
		}
		d.listen.mu.Lock()
		d.listen.streams++
		if try > 0 {
			d.listen.reopens++
		}
		d.listen.mu.Unlock()
		last := map[string]string{}
		for m := range l.C {
			if m.Method != proto.NotifyTasks {
				continue
			}
			id, state, status, ok := noteState(m.Params)
			if !ok {
				continue
			}
			d.listen.mu.Lock()
			d.listen.notifications++
			if prev, seen := last[id]; seen && prev == state {
				d.listen.duplicates++
				if len(d.listen.examples) < 3 {
					d.listen.examples = append(d.listen.examples, fmt.Sprintf("%s %s %q twice", id, status, message(m.Params)))
				}
			}
			d.listen.mu.Unlock()
			last[id] = state
			if status.Terminal() {
				delete(remaining, id)
				if len(remaining) == 0 {
					stop()
				}
			}
		}
		stop()
	}
}

// noteState is a notifications/tasks' task id, its state (the params
// without _meta, keys sorted) and status.
func noteState(params json.RawMessage) (id, state string, status proto.TaskStatus, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return "", "", "", false
	}
	delete(m, "_meta")
	if json.Unmarshal(m["taskId"], &id) != nil || json.Unmarshal(m["status"], &status) != nil {
		return "", "", "", false
	}
	b, err := json.Marshal(m) // map keys marshal sorted
	if err != nil {
		return "", "", "", false
	}
	return id, string(b), status, true
}

// message is a notification's statusMessage.
func message(params json.RawMessage) string {
	var m struct {
		StatusMessage string `json:"statusMessage"`
	}
	_ = json.Unmarshal(params, &m)
	return m.StatusMessage
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// randSource seeds the driver's random choices.
func randSource(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 0x6d637071)) }
