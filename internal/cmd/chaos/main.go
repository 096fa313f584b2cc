// Command chaos is the fault run behind scripts/chaos (test-only, like
// internal/cmd/rrproxy). It starts a redis-server with AOF (fsync always), two
// front ends (mcpq frontend --allow-anonymous) and three workers (mcpq
// worker --fixtures chaos) on loopback, drives a mix of the chaos tools
// (internal/toolpack/chaos) through the front ends, injects faults (SIGKILL
// of workers and a front end, SIGSTOP of a worker, one Redis restart),
// cancels a share of the tasks (some while their worker is dead or
// stopped), follows a share on subscriptions/listen streams, lets every
// task finish, then checks the invariants and prints a report with
// PASS/FAIL per target. It exits 1 on any FAIL and 2 when the run itself
// could not be made. docs/reliability.md explains every report line.
//
//	chaos [--short] [--duration 3m] [flags] [-- extra mcpq worker flags]
//
// What happened is read from Redis's MONITOR feed (monitor.go): every
// command a script runs is an accepted write, in Redis's own order.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/worker"
)

// config is one run's settings; targets are the acceptance limits.
type config struct {
	short            bool
	duration         time.Duration // the whole run: load, then the drain
	loadShare        float64       // share of duration that creates tasks and injects faults
	rate             float64       // tasks created per second
	pause            time.Duration // SIGSTOP length
	restartDelay     time.Duration // from a SIGKILL to the restart
	faultCancelAfter time.Duration // from a worker fault to cancelling some of its tasks
	seed             int64
	cancelPct        int // share of chaos_steps tasks cancelled at random (percent)
	followPct        int // share of tasks followed on listen streams (percent)
	mcpq, redis      string
	logs             string
	workerArgs       []string
	frontendArgs     []string
	takeoverMed      time.Duration
	takeoverMax      time.Duration
	cancelMax        time.Duration
	resumeMax        time.Duration
	workers          int
	frontends        int
	redisStopWith    string
	redisFaults      bool          // the Redis run: a freeze and a restart, no worker faults (redisfaults.go)
	redisPause       time.Duration // the freeze's length
	commandTools     bool          // also run chaos_tree, a command tool with a grandchild (trees.go)
	churn            int           // worker SIGKILLs of the churn (churn.go; 0: none)
	queueShards      int           // shards of the tools' queue, on front ends and workers (1: unsharded)
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.BoolVar(&c.short, "short", false, "the short variant: about 90 s, each fault kind once, fewer tasks")
	fs.DurationVar(&c.duration, "duration", 0, "whole run, load then drain (default 3m; 90s with --short)")
	fs.Float64Var(&c.loadShare, "load-share", 0.7, "share of --duration that creates tasks and injects faults")
	fs.Float64Var(&c.rate, "rate", 0, "tasks created per second (default 2; 1.5 with --short)")
	fs.DurationVar(&c.pause, "pause", 25*time.Second, "how long a worker stays SIGSTOPped")
	fs.DurationVar(&c.restartDelay, "restart-delay", 2*time.Second, "from a SIGKILL to the process's restart")
	fs.DurationVar(&c.faultCancelAfter, "fault-cancel-after", 1500*time.Millisecond, "from a worker's SIGKILL or SIGSTOP to cancelling up to 3 of the tasks it held")
	fs.Int64Var(&c.seed, "seed", 0, "random seed (default: from the clock; printed)")
	fs.IntVar(&c.cancelPct, "cancel-pct", 10, "percent of chaos_steps tasks cancelled at random")
	fs.IntVar(&c.followPct, "follow-pct", 25, "percent of tasks followed on subscriptions/listen streams")
	fs.StringVar(&c.mcpq, "mcpq", "mcpq", "the mcpq binary")
	fs.StringVar(&c.redis, "redis-server", "redis-server", "the redis-server binary")
	fs.StringVar(&c.logs, "logs", "", "folder for process logs, Redis's AOF and the report (default: a new temp folder)")
	frontendArgs := fs.String("frontend-args", "", "extra mcpq frontend flags, space-separated")
	fs.DurationVar(&c.takeoverMed, "takeover-median", 15*time.Second, "target: median takeover below this")
	fs.DurationVar(&c.takeoverMax, "takeover-max", 30*time.Second, "target: every takeover below this")
	fs.DurationVar(&c.cancelMax, "cancel-max", 5*time.Second, "target: every cancel terminal within this of its ack")
	fs.DurationVar(&c.resumeMax, "resume-max", 10*time.Second, "target: in-flight tasks write again within this of Redis returning")
	fs.StringVar(&c.redisStopWith, "redis-signal", "TERM", "how Redis is stopped for its restart: TERM or KILL")
	fs.BoolVar(&c.redisFaults, "redis-faults", false, "the Redis run: Redis frozen (SIGSTOP) for --redis-pause, later restarted, every worker alive; checks that nothing is taken from a live worker")
	fs.DurationVar(&c.redisPause, "redis-pause", 30*time.Second, "how long the Redis run keeps Redis frozen")
	fs.IntVar(&c.churn, "churn", 0, "continuous churn: this many worker SIGKILLs, one every 2 to 5 s from 30% of the load phase (0: none); adds the claimed-after-takeover check")
	fs.IntVar(&c.queueShards, "queue-shards", 1, "split the tools' queue (mcpq) into this many shards on every front end and worker (docs/deploy.md, \"Queue shards\"); adds the check that every shard took jobs")
	fs.BoolVar(&c.commandTools, "command-tools", false, "also run chaos_tree, a command tool whose program has a grandchild, and check that no two runs of a task overlap and none is left")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: chaos [flags] [-- extra mcpq worker flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.workerArgs = fs.Args()
	c.frontendArgs = strings.Fields(*frontendArgs)
	if c.queueShards > 1 {
		shards := worker.DefaultQueue + "=" + strconv.Itoa(c.queueShards)
		c.workerArgs = append(c.workerArgs, "--queue-shards", shards)
		c.frontendArgs = append(c.frontendArgs, "--queue-shards", shards)
	}
	c.workers, c.frontends = 3, 2
	if c.duration == 0 {
		c.duration = 3 * time.Minute
		if c.short {
			c.duration = 90 * time.Second
		}
	}
	if c.rate == 0 {
		c.rate = 2
		if c.short {
			c.rate = 1.5
		}
	}
	if c.seed == 0 {
		c.seed = time.Now().UnixNano() % 1_000_000
	}
	switch {
	case c.duration < 30*time.Second || c.duration > time.Hour:
		return c, fmt.Errorf("--duration %s: must be from 30s to 1h", c.duration)
	case c.loadShare < 0.2 || c.loadShare > 0.9:
		return c, fmt.Errorf("--load-share %g: must be from 0.2 to 0.9", c.loadShare)
	case c.rate <= 0 || c.rate > 50:
		return c, fmt.Errorf("--rate %g: must be above 0 and at most 50", c.rate)
	case c.pause <= 0 || c.pause > c.duration:
		return c, fmt.Errorf("--pause %s: must be above 0 and at most --duration", c.pause)
	case c.restartDelay < 0 || c.restartDelay > time.Minute:
		return c, fmt.Errorf("--restart-delay %s: must be from 0 to 1m", c.restartDelay)
	case c.faultCancelAfter < 0 || c.faultCancelAfter > c.duration/2:
		return c, fmt.Errorf("--fault-cancel-after %s: must be from 0 to half of --duration", c.faultCancelAfter)
	case c.cancelPct < 0 || c.cancelPct > 100 || c.followPct < 0 || c.followPct > 100:
		return c, errors.New("--cancel-pct and --follow-pct must be from 0 to 100")
	case c.churn < 0 || c.churn > 100 || (c.churn > 0 && (c.short || c.redisFaults)):
		return c, fmt.Errorf("--churn %d: must be from 0 to 100, and only in the full run", c.churn)
	case c.redisStopWith != "TERM" && c.redisStopWith != "KILL":
		return c, fmt.Errorf("--redis-signal %q: must be TERM or KILL", c.redisStopWith)
	}
	if c.redisFaults && (c.short || c.redisPause <= frozenBound+time.Second || c.redisPause > time.Duration(float64(c.duration)*c.loadShare*0.45)) {
		return c, fmt.Errorf("--redis-faults: --redis-pause %s must be above %s and at most 45%% of the load phase, without --short", c.redisPause, frozenBound+time.Second)
	}
	if c.pause > time.Duration(float64(c.duration)*c.loadShare*0.45) {
		return c, fmt.Errorf("--pause %s does not fit the load phase of --duration %s (at most 45%% of it)", c.pause, c.duration)
	}
	return c, nil
}

// driver is one run: its processes, its tasks and what it observed.
type driver struct {
	cfg       config
	prefix    string
	out       io.Writer
	redis     *proc
	redisAddr string
	gate      *gate // what front ends and workers connect to: Redis behind a gate (gate.go)
	admin     *redis.Client
	obs       *observer
	workers   []*proc
	frontends []*proc
	feBase    []string
	clients   []*client.Client // requests (with a timeout)
	listeners []*client.Client // listen streams (no timeout)
	rr        atomic.Int64
	rngMu     sync.Mutex
	rng       interface{ IntN(int) int }
	wg        sync.WaitGroup

	monitorExpected atomic.Bool     // the monitor's connection may end (Redis restart, run end)
	monitorDone     <-chan struct{} // closed when the current monitor connection ended
	fatalErr        chan error

	mu           sync.Mutex
	tasks        []*tk
	byID         map[string]*tk
	createErrs   map[string]int
	faults       []fault
	redisRestart *redisRestart
	redisPause   *redisPause
	listen       listenStats
	start, end   time.Time // the run's start, and its end: load and drain
}

func (d *driver) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "chaos %6.1fs: %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}

// fatal stops the run: the driver could not make it (not a FAIL of mcpq).
func (d *driver) fatal(err error) {
	select {
	case d.fatalErr <- err:
	default:
	}
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pass, err := run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if !pass {
		os.Exit(1)
	}
}

// run makes one run and reports whether every check passed.
func run(ctx context.Context, cfg config, out io.Writer) (bool, error) {
	if cfg.logs == "" {
		dir, err := os.MkdirTemp("", "mcpq-chaos-")
		if err != nil {
			return false, err
		}
		cfg.logs = dir
	}
	if err := os.MkdirAll(filepath.Join(cfg.logs, "redis"), 0o755); err != nil {
		return false, err
	}
	d := &driver{cfg: cfg, out: out, prefix: "chaos" + strconv.Itoa(os.Getpid()) + ":", rng: randSource(cfg.seed),
		byID: map[string]*tk{}, createErrs: map[string]int{}, fatalErr: make(chan error, 1), start: time.Now()}
	d.obs = newObserver(d.prefix)
	defer d.stopAll()
	if err := d.startAll(ctx); err != nil {
		return false, fmt.Errorf("%w (logs in %s)", err, cfg.logs)
	}
	d.start = time.Now() // the clock of the fault plan starts with every process up
	d.end = d.start.Add(cfg.duration)
	d.logf("running %s for %s (seed %d, logs in %s)", variant(cfg), cfg.duration, cfg.seed, cfg.logs)
	if err := d.drive(ctx); err != nil {
		return false, fmt.Errorf("%w (logs in %s)", err, cfg.logs)
	}
	rep := d.report(ctx)
	text := rep.String()
	fmt.Fprint(out, text)
	_ = os.WriteFile(filepath.Join(cfg.logs, "report.txt"), []byte(text), 0o644)
	return rep.pass(), nil
}

func variant(c config) string {
	if c.redisFaults {
		return "the Redis run"
	}
	if c.short {
		return "the short variant"
	}
	return "the full run"
}

// startAll starts Redis and attaches the monitor before anything else
// talks to Redis, then the workers and front ends, and waits until the
// chaos tools are listed.
func (d *driver) startAll(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	d.redisAddr = fmt.Sprintf("127.0.0.1:%d", port)
	d.redis = &proc{name: "redis", bin: d.cfg.redis, args: redisArgs(port, filepath.Join(d.cfg.logs, "redis")), logs: d.cfg.logs}
	if err := d.redis.start(); err != nil {
		return err
	}
	d.admin = redis.NewClient(&redis.Options{Addr: d.redisAddr, MaxRetries: -1, DialTimeout: time.Second})
	if err := waitFor(ctx, "redis-server up", 30*time.Second, func() bool { return d.admin.Ping(ctx).Err() == nil }); err != nil {
		return err
	}
	if err := d.attachMonitor(ctx); err != nil {
		return err
	}
	if d.gate, err = newGate(d.redisAddr); err != nil {
		return err
	}
	env := []string{"REDIS_URL=redis://" + d.gate.addr() + "/0", "MCPQ_PREFIX=" + d.prefix}
	wargs, wenv := []string{"worker", "--fixtures", "chaos"}, env
	if d.cfg.commandTools {
		tools, err := d.writeTreeTools()
		if err != nil {
			return err
		}
		wargs, wenv = append(wargs, "--tools", tools), append(wenv[:len(wenv):len(wenv)], "TREE_DIR="+d.treeDir())
	}
	for i := range d.cfg.workers {
		args := append(append([]string(nil), wargs...), d.cfg.workerArgs...)
		w := &proc{name: fmt.Sprintf("worker%d", i+1), bin: d.cfg.mcpq, args: args, env: wenv, logs: d.cfg.logs}
		if err := w.start(); err != nil {
			return err
		}
		d.workers = append(d.workers, w)
	}
	for i := range d.cfg.frontends {
		port, err := freePort()
		if err != nil {
			return err
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		args := append([]string{"frontend", "--allow-anonymous", "--addr", fmt.Sprintf("127.0.0.1:%d", port)}, d.cfg.frontendArgs...)
		f := &proc{name: fmt.Sprintf("frontend%d", i+1), bin: d.cfg.mcpq, args: args, env: env, logs: d.cfg.logs}
		if err := f.start(); err != nil {
			return err
		}
		d.frontends, d.feBase = append(d.frontends, f), append(d.feBase, base)
		d.clients = append(d.clients, &client.Client{URL: base + "/mcp", Tasks: true, HTTP: &http.Client{Timeout: 15 * time.Second}})
		d.listeners = append(d.listeners, &client.Client{URL: base + "/mcp", Tasks: true, HTTP: &http.Client{}})
	}
	for i, base := range d.feBase {
		if err := waitFor(ctx, d.frontends[i].name+" healthy", 30*time.Second, func() bool { return healthy(base) }); err != nil {
			return err
		}
	}
	return waitFor(ctx, "the chaos tools listed", 30*time.Second, func() bool {
		var r struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		if d.clients[0].Call(ctx, "tools/list", "", nil, &r) != nil {
			return false
		}
		n := 0
		for _, t := range r.Tools {
			if strings.HasPrefix(t.Name, "chaos_") {
				n++
			}
		}
		if d.cfg.commandTools {
			return n == 4
		}
		return n == 3
	})
}

// attachMonitor attaches the MONITOR feed and checks, with INFO
// commandstats, that no script ran on this Redis before it attached.
func (d *driver) attachMonitor(ctx context.Context) error {
	done, reason, err := d.obs.attach(d.redisAddr)
	if err != nil {
		return fmt.Errorf("attach MONITOR: %w", err)
	}
	d.monitorExpected.Store(false)
	d.monitorDone = done
	go func() {
		<-done
		if !d.monitorExpected.Load() {
			d.obs.gap(fmt.Sprintf("the monitor's connection ended at %s: %v", time.Now().Format("15:04:05.000"), *reason))
		}
	}()
	info, err := d.admin.Info(ctx, "commandstats").Result()
	if err != nil {
		return fmt.Errorf("INFO commandstats: %w", err)
	}
	seen, err := d.obs.scriptsBeforeInfo(10 * time.Second)
	if err != nil {
		return err
	}
	if ran := scriptCalls(info); ran > seen {
		d.obs.gap(fmt.Sprintf("%d script calls ran before the monitor attached at %s", ran-seen, time.Now().Format("15:04:05.000")))
	}
	return nil
}

// scriptCalls sums the calls of the script commands in INFO commandstats.
func scriptCalls(info string) int64 {
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		switch name {
		case "cmdstat_eval", "cmdstat_evalsha", "cmdstat_eval_ro", "cmdstat_evalsha_ro", "cmdstat_fcall", "cmdstat_fcall_ro":
		default:
			continue
		}
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				c, _ := strconv.ParseInt(v, 10, 64)
				n += c
			}
		}
	}
	return n
}

// stopAll stops every process: front ends and workers first, Redis last.
func (d *driver) stopAll() {
	d.monitorExpected.Store(true)
	var wg sync.WaitGroup
	for _, p := range append(append([]*proc{}, d.frontends...), d.workers...) {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop(syscall.SIGTERM, 5*time.Second) }()
	}
	wg.Wait()
	if d.gate != nil {
		d.gate.close()
	}
	if d.admin != nil {
		d.admin.Close()
	}
	if d.redis != nil {
		d.redis.stop(syscall.SIGTERM, 5*time.Second)
	}
}
