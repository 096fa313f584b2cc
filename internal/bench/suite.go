package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// Config is one run's settings.
type Config struct {
	// RedisURL is a fresh redis-server the run may flush (required).
	RedisURL string `json:"-"`
	// Exe is the harness binary, run as the child processes (default: this one).
	Exe string `json:"-"`
	// Concurrency lists the load generator's concurrencies.
	Concurrency []int `json:"concurrency"`
	// Warmup precedes each measured window; Duration is the window.
	Warmup   time.Duration `json:"warmupNs"`
	Duration time.Duration `json:"durationNs"`
	// WorkerJobs is how many jobs each worker-throughput point drains.
	WorkerJobs int `json:"workerJobs"`
	// Rounds is how many times groups 1 to 5 measure each figure of a
	// concurrency, a round measuring all of them back to back; they report
	// medians of the rounds (rounds.go). Less than 1 counts as 1.
	Rounds int `json:"rounds"`
	// Listeners is how many subscriptions/listen streams are open for the
	// notification measurement; NotifyRate is its events per second.
	Listeners  int `json:"listeners"`
	NotifyRate int `json:"notifyRate"`
	// CancelTrials is how many cancels each cancel-latency figure times.
	CancelTrials int `json:"cancelTrials"`
	// LiveSmall and LiveLarge are the live-task counts tasks/get latency is
	// compared at (LiveLarge 0 skips the large point).
	LiveSmall int `json:"liveSmall"`
	LiveLarge int `json:"liveLarge"`
	// MemTasks is how many tasks the bytes-per-task figure creates.
	MemTasks int `json:"memTasks"`
	// Profile is a directory for pprof profiles of the create, tasks/get and
	// worker paths under load (taken after the measurements; "" for none).
	Profile string `json:"profile,omitempty"`
	// CostTasks is how many sync calls, floor lives and creates the cost
	// group measures per figure; CostJobs how many jobs each of its drains
	// runs (measure_cost.go).
	CostTasks int `json:"costTasks"`
	CostJobs  int `json:"costJobs"`
	// Baseline names the commit the cost group compares the front end
	// with; BaselineExe is that commit's harness binary (its "serve
	// frontend" is the baseline child) and BaselineFrontendTest its
	// frontend test binary (go test -c ./frontend), FrontendTest this
	// commit's. scripts/bench builds them; empty ones are skipped.
	Baseline             string `json:"baseline,omitempty"`
	BaselineExe          string `json:"-"`
	FrontendTest         string `json:"-"`
	BaselineFrontendTest string `json:"-"`
	// Only runs just the listed groups ("1".."12", "cost"; empty: all).
	Only []string `json:"only,omitempty"`
	// Billing runs the front end with billing on (frontend.Config.Billing),
	// the noop tool priced at 1 unit a call and the anonymous principal
	// credited enough for the run: the create figures then include the
	// reservation in create.lua (docs/billing.md).
	Billing bool `json:"billing,omitempty"`
}

// suite is one run in progress.
type suite struct {
	cfg   Config
	rdb   *redis.Client
	store *taskstate.Store
	keys  taskstate.Keys
	rep   *Report
	// memory samples for group 10, filled in by the groups that load the
	// processes.
	feIdle, feLoad, wkIdle, wkLoad *memory
	// liveIDs are the ids loadRecords wrote since the last flush.
	liveIDs []string
}

// Run runs every measurement and returns the report. A measurement that
// fails is listed in Report.Skipped; the others still run.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Exe = exe
	}
	cfg.Rounds = max(cfg.Rounds, 1)
	cfg.CostTasks = max(cfg.CostTasks, 100)
	cfg.CostJobs = max(cfg.CostJobs, 100)
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	s := &suite{cfg: cfg, rdb: rdb, keys: taskstate.Keys{Prefix: taskstate.DefaultPrefix},
		store: taskstate.New(rdb, taskstate.Options{}),
		rep:   &Report{Started: time.Now(), Settings: cfg, Command: strings.Join(os.Args, " ")}}
	s.rep.Machine = machine(ctx, rdb)
	groups := []struct {
		name string
		run  func(context.Context) error
	}{
		// The cost table first: it holds the targets (issue 31), so a run
		// that reaches its time limit loses a later group instead.
		{GroupCost, s.costGroup},
		{"1-4", s.httpGroups},
		{"5", s.workerThroughput},
		{"6", s.syncLatency},
		{"7", s.notifyLatency},
		{"8", s.cancelLatency},
		{"9", s.redisMemory},
		{"10", s.residentMemory},
		{"11", s.authTasksGet},
		{"12", s.upstreamLatency},
		{"profile", s.profiles},
	}
	for _, g := range groups {
		if !s.wants(g.name) {
			continue
		}
		if ctx.Err() != nil {
			s.rep.Skipped = append(s.rep.Skipped, g.name+": "+ctx.Err().Error())
			continue
		}
		fmt.Fprintf(os.Stderr, "==> group %s (at %s)\n", g.name, time.Since(s.rep.Started).Round(time.Second))
		if err := g.run(ctx); err != nil {
			s.rep.Skipped = append(s.rep.Skipped, fmt.Sprintf("group %s: %v", g.name, err))
			fmt.Fprintf(os.Stderr, "group %s failed: %v\n", g.name, err)
		}
	}
	s.rep.Elapsed = time.Since(s.rep.Started)
	return s.rep, nil
}

func (s *suite) wants(group string) bool {
	if group == "profile" {
		return s.cfg.Profile != ""
	}
	if len(s.cfg.Only) == 0 {
		return true
	}
	for _, o := range s.cfg.Only {
		if o == group || (group == "1-4" && strings.Contains("1234", o) && len(o) == 1) {
			return true
		}
	}
	return false
}

func (s *suite) maxConc() int {
	m := 1
	for _, c := range s.cfg.Concurrency {
		m = max(m, c)
	}
	return m
}

// spawn starts a child serving role on the run's Redis.
func (s *suite) spawn(ctx context.Context, role string, extra ...string) (*proc, error) {
	if role == RoleFrontend && s.cfg.Billing {
		extra = append(extra, "-billing")
	}
	return spawn(ctx, s.cfg.Exe, role, s.cfg.RedisURL, extra...)
}

// flush empties Redis.
func (s *suite) flush(ctx context.Context) error {
	return s.rdb.FlushAll(ctx).Err()
}

// publishCatalog writes the bench tools into the catalog and marks them
// served for a day (as a live worker's heartbeat would), as a worker would.
func (s *suite) publishCatalog(ctx context.Context) error {
	defs := benchToolDefs()
	if s.cfg.Billing {
		for i := range defs {
			if defs[i].Tool.Name == toolNoop {
				defs[i].Price = &proto.Price{Base: 1}
			}
		}
		if _, err := s.store.Accounts().Credit(ctx, frontend.AnonymousPrincipal, proto.MaxAmount); err != nil {
			return err
		}
	}
	if err := s.store.Catalog().Publish(ctx, defs); err != nil {
		return err
	}
	keys := make([]string, len(defs))
	for i := range defs {
		keys[i] = defs[i].Key()
	}
	_, err := s.store.Catalog().Serve(ctx, keys, s.store.Now().Add(24*time.Hour))
	return err
}

// createParams are the parameters the front end creates a noop task with.
func createParams(id string) taskstate.CreateParams {
	ttl := time.Hour.Milliseconds()
	return taskstate.CreateParams{ID: id, Principal: frontend.AnonymousPrincipal, Tool: toolNoop,
		Arguments: json.RawMessage(`{}`), TTLMs: &ttl, PollIntervalMs: 1000, StatusMessage: "Queued",
		Capabilities: json.RawMessage(`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)}
}

// createTasks writes n task records through Store.Create (conc at a time)
// and, with enqueue, enqueues their jobs as the front end does.
func (s *suite) createTasks(ctx context.Context, n, conc int, enqueue bool) ([]taskstate.Ref, error) {
	refs := make([]taskstate.Ref, n)
	enq := queue.NewClient(s.rdb, queue.Options{Prefix: s.keys.Prefix})
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				rec, err := s.store.Create(ctx, createParams(taskstate.NewID()))
				if err == nil && enqueue {
					err = s.enqueueJob(ctx, enq, rec.Ref)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				refs[i] = rec.Ref
			}
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return refs, firstErr
}

// enqueueJob enqueues a task's job as the front end does.
func (s *suite) enqueueJob(ctx context.Context, enq *queue.Client, ref taskstate.Ref) error {
	return enq.Enqueue(ctx, queue.Job{Ref: ref, Tool: toolNoop, Queue: worker.DefaultQueue})
}

func ids(refs []taskstate.Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

// loadRow runs one closed-loop load against server (nil: in this process)
// and returns its row (not yet added).
func (s *suite) loadRow(ctx context.Context, group, figure string, c int, server *proc, op NewOp) (*Row, error) {
	probe := startProbe(ctx, s.rdb, server)
	st, err := Load(ctx, c, s.cfg.Warmup, s.cfg.Duration, op)
	cpu := probe.end(ctx, st.Total)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", figure, err)
	}
	detail := fmt.Sprintf("p50 %.2f ms, p99 %.2f ms; CPU per op: server %.0f µs, redis %.0f µs",
		ms(st.P50), ms(st.P99), cpu.ServerUsPerOp, cpu.RedisUsPerOp)
	var issue string
	if st.Errors > 0 {
		issue = fmt.Sprintf("%d errors (%s)", st.Errors, st.FirstError)
	}
	return &Row{Group: group, Figure: figure, Value: st.Throughput, Unit: "ops/s", CPU: &cpu, Stats: &st,
		Note: strings.Join(nonEmpty(detail, issue), "; "), detail: detail, issue: issue}, nil
}

// sampleMemory samples p's memory every 200 ms until stop is called and
// returns the sample with the highest RSS.
func sampleMemory(p *proc) (stop func() *memory) {
	done := make(chan struct{})
	res := make(chan *memory, 1)
	go func() {
		var best *memory
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			if m, err := p.memory(); err == nil && (best == nil || m.RSSKiB > best.RSSKiB) {
				best = &m
			}
			select {
			case <-done:
				res <- best
				return
			case <-t.C:
			}
		}
	}()
	return func() *memory { close(done); return <-res }
}

func keepMax(dst **memory, m *memory) {
	if m != nil && (*dst == nil || m.RSSKiB > (*dst).RSSKiB) {
		*dst = m
	}
}

func machine(ctx context.Context, rdb *redis.Client) Machine {
	m := Machine{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(),
		RedisVersion: redisInfo(ctx, rdb, "server")["redis_version"]}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				m.MemTotal = strings.TrimSpace(v)
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if out, err := exec.Command("uname", "-r").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	return m
}

// noopResult checks a plain (non-task) tools/call answer.
func noopResult(r *proto.CallToolResult) error {
	if r == nil || r.IsError || len(r.Content) == 0 || r.Content[0].Text != "ok" {
		return fmt.Errorf("unexpected result %+v", r)
	}
	return nil
}
