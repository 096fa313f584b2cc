package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// newClient is an mcpq client of the front end at addr with its own
// connection pool.
func newClient(addr string, tasks bool) *client.Client {
	tr := &http.Transport{MaxIdleConns: 2048, MaxIdleConnsPerHost: 2048, IdleConnTimeout: time.Minute}
	return &client.Client{URL: "http://" + addr + "/mcp", HTTP: &http.Client{Transport: tr}, Tasks: tasks,
		Info: &proto.Implementation{Name: "mcpqbench", Version: "1.0.0"}}
}

// syncLatency (group 6) times a sync-policy no-op tool end to end: the
// call through the front end, the job through asynq to the worker and the
// result back through the task's event channel.
func (s *suite) syncLatency(ctx context.Context) error {
	if err := s.flush(ctx); err != nil {
		return err
	}
	wk, err := s.spawn(ctx, RoleWorker)
	if err != nil {
		return err
	}
	defer wk.stop()
	time.Sleep(time.Second)
	if m, err := wk.memory(); err == nil {
		s.wkIdle = &m
	}
	fe, err := s.spawn(ctx, RoleFrontend)
	if err != nil {
		return err
	}
	defer fe.stop()
	cl := newClient(fe.addr, false)
	op := func(int) (Op, func(), error) {
		return func(ctx context.Context) error {
			a, err := cl.CallTool(ctx, toolNoopSync, map[string]any{})
			if err != nil {
				return err
			}
			return noopResult(a.Result)
		}, nil, nil
	}
	// Random (Poisson) arrivals: how clients call. The targets apply here.
	const rate = 40
	st, err := openLoop(ctx, rate, s.cfg.Warmup, 2*s.cfg.Duration, func(ctx context.Context) error {
		a, err := cl.CallTool(ctx, toolNoopSync, map[string]any{})
		if err != nil {
			return err
		}
		return noopResult(a.Result)
	})
	if err != nil {
		return err
	}
	s.rep.add(&Row{Group: "6", Figure: fmt.Sprintf("sync path p50, random arrivals %d/s", rate), Value: ms(st.P50), Unit: "ms",
		Stats: &st, Target: &Target{"value<=", 2}, Note: fmt.Sprintf("%d calls; p90 %.2f ms", st.Ops, ms(st.P90))})
	s.rep.add(&Row{Group: "6", Figure: fmt.Sprintf("sync path p99, random arrivals %d/s", rate), Value: ms(st.P99), Unit: "ms",
		Target: &Target{"value<=", 10}, Note: fmt.Sprintf("max %.2f ms", ms(st.Max))})
	// The same with workers polling every 5 ms instead of the default 20 ms.
	wk.stop()
	wk5, err := s.spawn(ctx, RoleWorker, "-task-check-interval", "5ms")
	if err != nil {
		return err
	}
	st5, err := openLoop(ctx, rate, s.cfg.Warmup, 2*s.cfg.Duration, func(ctx context.Context) error {
		a, err := cl.CallTool(ctx, toolNoopSync, map[string]any{})
		if err != nil {
			return err
		}
		return noopResult(a.Result)
	})
	wk5.stop()
	if err != nil {
		return err
	}
	s.rep.add(&Row{Group: "6", Figure: fmt.Sprintf("sync path p50, random arrivals %d/s, worker TaskCheckInterval 5ms", rate),
		Value: ms(st5.P50), Unit: "ms", Stats: &st5, Note: fmt.Sprintf("p99 %.2f ms; a worker setting, not the default", ms(st5.P99))})
	if err := s.idleLoad(ctx); err != nil {
		return err
	}
	if wk, err = s.spawn(ctx, RoleWorker); err != nil {
		return err
	}
	defer wk.stop()
	// Closed loops: each call starts as the previous one ends, which lines
	// up with the worker's idle poll at c=1 (its worst case).
	for _, c := range []int{1, 16} {
		row, err := s.loadRow(ctx, "6", fmt.Sprintf("sync tools/call end to end c=%d", c), c, fe, op)
		if err != nil {
			return err
		}
		st := row.Stats
		s.rep.add(&Row{Group: "6", Figure: fmt.Sprintf("sync path p50, closed loop c=%d", c), Value: ms(st.P50), Unit: "ms",
			CPU: row.CPU, Stats: st, Note: fmt.Sprintf("%.0f calls/s; p90 %.2f ms, max %.2f ms", st.Throughput, ms(st.P90), ms(st.Max))})
		s.rep.add(&Row{Group: "6", Figure: fmt.Sprintf("sync path p99, closed loop c=%d", c), Value: ms(st.P99), Unit: "ms"})
	}
	return nil
}

// idleFleet is how many idle workers idleLoad runs at once.
const idleFleet = 10

// idleLoad (group 6) is the Redis load of an idle fleet: the commands per
// second Redis runs for idleFleet default workers with nothing to do
// (their dequeue sweeps, catalog heartbeats, takeover and reaper scans).
func (s *suite) idleLoad(ctx context.Context) error {
	fleet := make([]*proc, 0, idleFleet)
	defer func() {
		for _, p := range fleet {
			p.stop()
		}
	}()
	for range idleFleet {
		p, err := s.spawn(ctx, RoleWorker)
		if err != nil {
			return err
		}
		fleet = append(fleet, p)
	}
	time.Sleep(2 * time.Second) // started and settled
	const window = 10 * time.Second
	n0, cpu0 := redisCommands(ctx, s.rdb), redisCPU(ctx, s.rdb)
	time.Sleep(window)
	n1, cpu1 := redisCommands(ctx, s.rdb), redisCPU(ctx, s.rdb)
	perSec := float64(n1-n0-1) / window.Seconds() // the first INFO counts
	s.rep.add(&Row{Group: "6", Figure: fmt.Sprintf("idle Redis load, %d idle workers", idleFleet), Value: perSec, Unit: "cmd/s",
		Note: fmt.Sprintf("INFO total_commands_processed over %v; Redis CPU %.1f %%", window,
			100*float64(cpu1-cpu0)/float64(window))})
	return nil
}

// openLoop starts op at random (exponential) intervals, rate per second on
// average, for warmup+dur, whatever the answers' latency, and returns the
// latencies of the calls started after the warm-up.
func openLoop(ctx context.Context, rate float64, warmup, dur time.Duration, op func(context.Context) error) (Stats, error) {
	var (
		mu       sync.Mutex
		lat      []time.Duration
		wg       sync.WaitGroup
		firstErr error
	)
	start := time.Now()
	from, end := start.Add(warmup), start.Add(warmup+dur)
	next := start
	for next.Before(end) && ctx.Err() == nil {
		time.Sleep(time.Until(next))
		counted := !next.Before(from)
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			err := op(ctx)
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && firstErr == nil:
				firstErr = err
			case err == nil && counted:
				lat = append(lat, d)
			}
		}()
		next = next.Add(time.Duration(rand.ExpFloat64() / rate * float64(time.Second)))
	}
	wg.Wait()
	if firstErr != nil {
		return Stats{}, firstErr
	}
	st := latencyStats(lat)
	st.Window, st.Throughput = dur, float64(len(lat))/dur.Seconds()
	return st, ctx.Err()
}

// notifyLatency (group 7) opens Listeners subscriptions/listen streams, one
// per task, and times notifications/tasks from the state change (a worker's
// Progress write) to its arrival on the listener's stream: first a steady
// NotifyRate events per second spread over the tasks, then a burst that
// changes every task at once.
func (s *suite) notifyLatency(ctx context.Context) error {
	if err := s.flush(ctx); err != nil {
		return err
	}
	fe, err := s.spawn(ctx, RoleFrontend)
	if err != nil {
		return err
	}
	defer fe.stop()
	n := s.cfg.Listeners
	refs, err := s.createTasks(ctx, n, 32, false)
	if err != nil {
		return err
	}
	attempts := make([]int64, n)
	if err := parallel(ctx, n, 32, func(i int) error {
		c, err := s.store.Claim(ctx, refs[i], 0, taskstate.Share{})
		if err == nil {
			attempts[i] = c.Attempt
		}
		return err
	}); err != nil {
		return err
	}

	steady := int(float64(s.cfg.NotifyRate) * (s.cfg.Warmup + 2*s.cfg.Duration).Seconds())
	total := steady + n
	sent := make([]atomic.Int64, total)
	got := make([]atomic.Int64, total)
	lctx, closeAll := context.WithCancel(ctx)
	defer closeAll()
	cl := newClient(fe.addr, true)
	setup := time.Now()
	if err := parallel(ctx, n, 32, func(i int) error {
		l, err := cl.Listen(lctx, map[string]any{"taskIds": []string{refs[i].ID}})
		if err != nil {
			return err
		}
		timeout := time.After(30 * time.Second)
		for done := false; !done; { // the acknowledgement, then the task's state as of it
			select {
			case m, ok := <-l.C:
				if !ok {
					return errors.New("listen stream ended early")
				}
				done = m.Method == proto.NotifyTasks
			case <-timeout:
				return errors.New("no initial notifications/tasks on a listen stream in 30 s")
			}
		}
		go func() {
			for m := range l.C {
				if m.Method != proto.NotifyTasks {
					continue
				}
				var p struct {
					StatusMessage string `json:"statusMessage"`
				}
				if json.Unmarshal(m.Params, &p) != nil {
					continue
				}
				if k, err := strconv.Atoi(strings.TrimPrefix(p.StatusMessage, "bench ")); err == nil && k >= 0 && k < total {
					got[k].CompareAndSwap(0, time.Now().UnixNano())
				}
			}
		}()
		return nil
	}); err != nil {
		return fmt.Errorf("opening %d listeners: %w", n, err)
	}
	setupTime := time.Since(setup)
	stop := sampleMemory(fe)
	defer func() {
		if m := stop(); m != nil {
			s.rep.add(&Row{Group: "10", Figure: fmt.Sprintf("front-end RSS with %d listeners", n),
				Value: float64(m.RSSKiB) / 1024, Unit: "MiB", Note: goMemNote(m)})
		}
		fe.stop() // drains: the streams end with their final result before the clients go
	}()

	send := func(k int) error {
		i := k % n
		sent[k].Store(time.Now().UnixNano())
		return s.store.Progress(ctx, refs[i], attempts[i], "bench "+strconv.Itoa(k))
	}
	// Steady: paced sends, the first Warmup's worth not counted.
	probe := startProbe(ctx, s.rdb, fe)
	interval := time.Second / time.Duration(max(1, s.cfg.NotifyRate))
	start := time.Now()
	var sendErr atomic.Value
	var wg sync.WaitGroup
	for k := range steady {
		if d := time.Until(start.Add(time.Duration(k) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := send(k); err != nil {
				sendErr.CompareAndSwap(nil, err)
			}
		}()
	}
	wg.Wait()
	skip := int(float64(s.cfg.NotifyRate) * s.cfg.Warmup.Seconds())
	steadyLat, lost := collect(sent[skip:steady], got[skip:steady], 5*time.Second)
	cpu := probe.end(ctx, int64(steady))
	if err, _ := sendErr.Load().(error); err != nil {
		return err
	}
	st := latencyStats(steadyLat)
	s.rep.add(&Row{Group: "7", Figure: fmt.Sprintf("notification p50, %d listeners, %d/s", n, s.cfg.NotifyRate),
		Value: ms(st.P50), Unit: "ms", CPU: &cpu, Stats: &st,
		Note: fmt.Sprintf("%d events, %d lost; listeners opened in %.1f s", len(steadyLat), lost, setupTime.Seconds())})
	s.rep.add(&Row{Group: "7", Figure: fmt.Sprintf("notification p99, %d listeners, %d/s", n, s.cfg.NotifyRate),
		Value: ms(st.P99), Unit: "ms", Target: &Target{"value<=", 10}, Note: fmt.Sprintf("max %.2f ms", ms(st.Max))})

	// Burst: every task changes at once.
	if err := parallel(ctx, n, 32, func(i int) error { return send(steady + i) }); err != nil {
		return err
	}
	burstLat, lost := collect(sent[steady:], got[steady:], 10*time.Second)
	bst := latencyStats(burstLat)
	s.rep.add(&Row{Group: "7", Figure: fmt.Sprintf("notification burst p50, all %d tasks change at once", n),
		Value: ms(bst.P50), Unit: "ms", Stats: &bst, Note: fmt.Sprintf("%d lost", lost)})
	s.rep.add(&Row{Group: "7", Figure: fmt.Sprintf("notification burst p99, all %d tasks change at once", n),
		Value: ms(bst.P99), Unit: "ms", Note: fmt.Sprintf("max %.2f ms", ms(bst.Max))})
	return nil
}

// collect waits up to wait for every sent event to arrive and returns the
// latencies and the number that never did.
func collect(sent, got []atomic.Int64, wait time.Duration) ([]time.Duration, int) {
	deadline := time.Now().Add(wait)
	for {
		missing := 0
		for i := range got {
			if got[i].Load() == 0 {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var lat []time.Duration
	lost := 0
	for i := range got {
		g, t := got[i].Load(), sent[i].Load()
		if g == 0 || t == 0 {
			lost++
			continue
		}
		lat = append(lat, time.Duration(max(0, g-t)))
	}
	return lat, lost
}

// cancelLatency (group 8) times tasks/cancel sent → cancelled visible for a
// tool whose 10 ms steps honour their context and for one whose steps
// ignore it. "Visible" is the record's status becoming cancelled, seen on
// the task's Redis event channel (the finish script writes the status and
// publishes in one atomic step).
func (s *suite) cancelLatency(ctx context.Context) error {
	if err := s.flush(ctx); err != nil {
		return err
	}
	wk, err := s.spawn(ctx, RoleWorker)
	if err != nil {
		return err
	}
	defer wk.stop()
	fe, err := s.spawn(ctx, RoleFrontend)
	if err != nil {
		return err
	}
	defer fe.stop()
	cl := newClient(fe.addr, true)
	for _, tool := range []string{toolSteps, toolStepsBlind} {
		var lat []time.Duration
		for range s.cfg.CancelTrials {
			d, err := s.cancelOnce(ctx, cl, tool)
			if err != nil {
				return fmt.Errorf("%s: %w", tool, err)
			}
			lat = append(lat, d)
		}
		st := latencyStats(lat)
		what := map[string]string{toolSteps: "steps honour ctx", toolStepsBlind: "steps ignore ctx"}[tool]
		s.rep.add(&Row{Group: "8", Figure: fmt.Sprintf("cancel latency p50, 10 ms steps (%s)", what), Value: ms(st.P50),
			Unit: "ms", Stats: &st, Note: fmt.Sprintf("%d trials", len(lat))})
		s.rep.add(&Row{Group: "8", Figure: fmt.Sprintf("cancel latency p99, 10 ms steps (%s)", what), Value: ms(st.P99),
			Unit: "ms", Note: fmt.Sprintf("max %.2f ms", ms(st.Max))})
	}
	return nil
}

func (s *suite) cancelOnce(ctx context.Context, cl *client.Client, tool string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	a, err := cl.CallTool(ctx, tool, map[string]any{})
	if err != nil {
		return 0, err
	}
	if a.Task == nil {
		return 0, fmt.Errorf("tools/call answered no task")
	}
	ref := taskstate.Ref{Owner: anonymousOwner, ID: a.Task.TaskID}
	ps := s.rdb.Subscribe(ctx, s.keys.Events(ref))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		return 0, err
	}
	ch := ps.Channel()
	waitFor := func(payload string) error {
		for {
			select {
			case m := <-ch:
				if string(events.Decode(m.Payload).Status) == payload {
					return nil
				}
			case <-ctx.Done():
				return fmt.Errorf("waiting for %q: %w", payload, ctx.Err())
			}
		}
	}
	if r, _ := s.rdb.HGet(ctx, s.keys.Task(ref), "running").Result(); r == "" || r == "0" {
		if err := waitFor(string(proto.StatusWorking)); err != nil { // the worker's claim
			return 0, err
		}
	}
	time.Sleep(time.Duration(rand.Int64N(int64(10 * time.Millisecond)))) // land anywhere in a step
	errc := make(chan error, 1)
	t0 := time.Now()
	go func() { _, err := cl.CancelTask(ctx, ref.ID); errc <- err }()
	if err := waitFor(string(proto.StatusCancelled)); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	if err := <-errc; err != nil {
		return 0, err
	}
	if t, err := cl.GetTask(ctx, ref.ID); err != nil || t.Status != proto.StatusCancelled {
		return 0, fmt.Errorf("tasks/get after cancel: %v %v", t, err)
	}
	return d, nil
}

// parallel runs fn(0..n-1), conc at a time, and returns the first error.
func parallel(ctx context.Context, n, conc int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	for range min(conc, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

func goMemNote(m *memory) string {
	return fmt.Sprintf("Go heap in use %.1f MiB, stacks %.1f MiB, from OS %.1f MiB, %d goroutines",
		float64(m.Go.HeapInuse)/(1<<20), float64(m.Go.StackInuse)/(1<<20), float64(m.Go.Sys)/(1<<20), m.Go.Goroutines)
}
