package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// The cost group (issue 31) measures what one operation costs each process
// in CPU time, each figure beside its floor taken in the same run: a ratio
// of two CPU figures measured minutes apart on one machine does not move
// with the machine's speed the way a ratio of throughputs does. Its rows
// form the cost table (Report.PrintCost), the source of docs/deploy.md's
// sizing arithmetic.

// costGroup runs the cost measurements: Redis CPU per finished task,
// front-end CPU and allocations per create, worker CPU per job and worker
// throughput against its ceiling, the sync path at random arrivals three
// times, and Redis bytes per task.
func (s *suite) costGroup(ctx context.Context) error {
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"redis per task", s.costRedis},
		{"front end per create", s.costFrontend},
		{"worker per job", s.costWorker},
		{"sync path", s.costSync},
		{"bytes per task", s.costBytes},
	}
	var failed []string
	for _, st := range steps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := st.run(ctx); err != nil {
			failed = append(failed, st.name+": "+err.Error())
			fmt.Fprintf(os.Stderr, "cost %s failed: %v\n", st.name, err)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return nil
}

// costRow adds a cost-table row; with a floor its ratio is value / floor.
func (s *suite) costRow(figure string, value float64, unit, floor string, floorValue float64, t *Target, note string) *Row {
	return s.rep.add(&Row{Group: GroupCost, Figure: figure, Value: value, Unit: unit, Baseline: floor,
		BaselineValue: floorValue, Target: t, Note: note})
}

// GroupCost names the cost group's rows (Config.Only "cost").
const GroupCost = "cost"

// costRedis measures Redis CPU per finished task: CostTasks synchronous
// calls of the sync no-op tool through a front end and a worker (create,
// wake-up, claim, finish, the answer), then one tasks/get of each, against
// the barest durable life on bare asynq (costFloorLife) with the same
// count, in this run.
func (s *suite) costRedis(ctx context.Context) error {
	n := s.cfg.CostTasks
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
	cl := newClient(fe.addr, false)
	call := func(ctx context.Context) error {
		a, err := cl.CallTool(ctx, toolNoopSync, map[string]any{})
		if err != nil {
			return err
		}
		return noopResult(a.Result)
	}
	// Warm up: connections, the catalog cache, Lua scripts loaded.
	if err := parallel(ctx, 50, costConc, func(int) error { return call(ctx) }); err != nil {
		return err
	}
	if err := s.flushTasks(ctx); err != nil {
		return err
	}
	m0 := s.redisMeter(ctx)
	fe0, wk0 := procCPU(fe.pid()), procCPU(wk.pid())
	if err := parallel(ctx, n, costConc, func(int) error { return call(ctx) }); err != nil {
		return err
	}
	callCost := s.redisMeter(ctx).since(m0, n)
	feCall, wkCall := perOp(procCPU(fe.pid())-fe0, n), perOp(procCPU(wk.pid())-wk0, n)
	ids, err := s.taskIDs(ctx, anonymousOwner)
	if err != nil {
		return err
	}
	if len(ids) < n {
		return fmt.Errorf("%d task records after %d sync calls", len(ids), n)
	}
	gcl := newClient(fe.addr, true)
	m1 := s.redisMeter(ctx)
	fe1 := procCPU(fe.pid())
	if err := parallel(ctx, n, costConc, func(i int) error {
		t, err := gcl.GetTask(ctx, ids[i])
		if err == nil && t.Status != proto.StatusCompleted {
			err = fmt.Errorf("tasks/get %s: status %s", ids[i], t.Status)
		}
		return err
	}); err != nil {
		return err
	}
	getCost := s.redisMeter(ctx).since(m1, n)
	feGet := perOp(procCPU(fe.pid())-fe1, n)
	wk.stop()
	fe.stop()

	floor, err := s.costFloorLife(ctx, n)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	s.costRow("Redis CPU per finished task (sync call + tasks/get)", callCost.us+getCost.us, "µs", "bare asynq durable life",
		floor.us, &Target{"ratio<=", 2.5}, fmt.Sprintf("%d calls at c=%d: call %.0f µs (%s), tasks/get %.0f µs; floor: %s",
			n, costConc, callCost.us, callCost.note(), getCost.us, floor.note()))
	// What the other processes spend on the same finished tasks: with the
	// Redis figure, what docs/deploy.md's sizing divides a core by.
	s.costRow("front-end CPU per finished task (sync call + tasks/get)", feCall+feGet, "µs", "", 0, nil,
		fmt.Sprintf("getrusage of the front-end child: call %.0f µs, tasks/get %.0f µs", feCall, feGet))
	s.costRow("worker CPU per finished task (sync call)", wkCall, "µs", "", 0, nil,
		"getrusage of the worker child over the same calls (concurrency 10)")
	return nil
}

// perOp is d per operation, in µs.
func perOp(d time.Duration, ops int) float64 { return float64(d.Microseconds()) / float64(ops) }

// costConc is how many operations the cost group's loads keep in flight.
const costConc = 8

// flushTasks empties Redis but keeps the catalog a worker published, so a
// warmed-up front end and worker go on serving.
func (s *suite) flushTasks(ctx context.Context) error {
	ids, err := s.taskIDs(ctx, anonymousOwner)
	if err != nil {
		return err
	}
	for i := 0; i < len(ids); i += 500 {
		keys := make([]string, 0, 1000)
		for _, id := range ids[i:min(i+500, len(ids))] {
			ref := taskstate.Ref{Owner: anonymousOwner, ID: id}
			keys = append(keys, s.keys.Task(ref), s.keys.TaskExtra(ref))
		}
		if err := s.rdb.Del(ctx, keys...).Err(); err != nil {
			return err
		}
	}
	return nil
}

// taskIDs lists the ids of owner's task records (a SCAN: not to be run
// inside a measurement).
func (s *suite) taskIDs(ctx context.Context, owner string) ([]string, error) {
	prefix := s.keys.Prefix + "{" + owner + "}:task:"
	var ids []string
	iter := s.rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		id := strings.TrimPrefix(iter.Val(), prefix)
		if !strings.Contains(id, ":") { // not a companion (Keys.TaskExtra)
			ids = append(ids, id)
		}
	}
	return ids, iter.Err()
}

// costFloorLife is the barest durable task life on bare asynq, n times:
// an HSET of a record like mcpq's, asynq's enqueue, its dequeue and done
// around a handler that HSETs its result into the record (an asynq worker
// child with -durable), and one HGETALL of the record.
func (s *suite) costFloorLife(ctx context.Context, n int) (redisCost, error) {
	if err := s.flush(ctx); err != nil {
		return redisCost{}, err
	}
	w, err := s.spawn(ctx, RoleAsynqWorker, "-durable", "-concurrency", "10")
	if err != nil {
		return redisCost{}, err
	}
	defer w.stop()
	enq := asynq.NewClientFromRedisClient(s.rdb)
	defer enq.Close()
	refs := make([]taskstate.Ref, n)
	for i := range refs {
		refs[i] = taskstate.Ref{Owner: anonymousOwner, ID: taskstate.NewID()}
	}
	life := func(ref taskstate.Ref) error {
		now := strconv.FormatInt(time.Now().UnixMilli(), 10)
		if err := s.rdb.HSet(ctx, s.keys.Task(ref), "status", "working", "statusMessage", "Queued", "createdAt", now,
			"lastUpdatedAt", now, "ttlMs", "3600000", "tool", toolNoop, "arguments", "{}").Err(); err != nil {
			return err
		}
		_, err := enq.EnqueueContext(ctx, asynq.NewTask(queue.Type, queue.Payload(queue.Job{Ref: ref, Tool: toolNoop})),
			asynq.TaskID(ref.ID), asynq.Queue(floorQueue), asynq.MaxRetry(queue.MaxRetry), asynq.Timeout(jobTimeout))
		return err
	}
	// Warm up (connections, asynq's scripts loaded), then measure.
	warm := 50
	if err := parallel(ctx, warm, costConc, func(int) error {
		return life(taskstate.Ref{Owner: anonymousOwner, ID: taskstate.NewID()})
	}); err != nil {
		return redisCost{}, err
	}
	if err := waitHandled(ctx, w, int64(warm)); err != nil {
		return redisCost{}, err
	}
	m0 := s.redisMeter(ctx)
	if err := parallel(ctx, n, costConc, func(i int) error { return life(refs[i]) }); err != nil {
		return redisCost{}, err
	}
	if err := waitHandled(ctx, w, int64(warm+n)); err != nil {
		return redisCost{}, err
	}
	if err := parallel(ctx, n, costConc, func(i int) error {
		m, err := s.rdb.HGetAll(ctx, s.keys.Task(refs[i])).Result()
		if err == nil && m["status"] != "completed" {
			err = fmt.Errorf("floor record %s: status %q", refs[i].ID, m["status"])
		}
		return err
	}); err != nil {
		return redisCost{}, err
	}
	return s.redisMeter(ctx).since(m0, n), nil
}

// waitHandled waits until the child handled n jobs (at most a minute).
func waitHandled(ctx context.Context, p *proc, n int64) error {
	deadline := time.Now().Add(time.Minute)
	for {
		var c childCount
		if err := p.getJSON("/count", &c); err != nil {
			return err
		}
		if c.Handled >= n {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s handled %d of %d jobs", p.role, c.Handled, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// floorHandler is the bare asynq worker's handler: nothing, or with
// durable an HSET of the result into the job's task record, then scripts
// EVALSHAs of floorScript (the weight of mcpq's claim).
func floorHandler(rdb *redis.Client, count *counter, durable bool, scripts int) asynq.HandlerFunc {
	keys := taskstate.Keys{Prefix: taskstate.DefaultPrefix}
	return func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		key := keys.Task(taskstate.Ref{Owner: anonymousOwner, ID: id})
		for i := range scripts {
			if err := floorScript.Run(ctx, rdb, []string{key, key + ":floor"}, time.Now().UnixMilli(), i).Err(); err != nil {
				return err
			}
		}
		if durable {
			if err := rdb.HSet(ctx, key, "status", "completed", "statusMessage", "Done",
				"result", `{"content":[{"type":"text","text":"ok"}]}`).Err(); err != nil {
				return err
			}
		}
		count.hit()
		return nil
	}
}

// floorScript has the shape and weight of taskstate's claim.lua without
// its shared prelude: read eleven fields of the record, write six, add the
// task to an index, publish a change and return the record.
var floorScript = redis.NewScript(`
local f = redis.call('HMGET', KEYS[1], 'status', 'cancel', 'createdAt', 'ttlMs', 'resumes', 'slot',
  'statusMessage', 'attempt', 'version', 'running', 'worker')
local attempt = tonumber(f[8] or '0') + 1
redis.call('HSET', KEYS[1], 'heartbeat', ARGV[1], 'statusMessage', 'Running', 'lastUpdatedAt', ARGV[1],
  'running', attempt, 'attempt', attempt, 'version', attempt)
redis.call('ZADD', KEYS[2], tonumber(ARGV[1]) + 30000, KEYS[1])
redis.call('PUBLISH', KEYS[1] .. ':events', 'working')
return redis.call('HGETALL', KEYS[1])
`)

// redisMeter is Redis's CPU time and per-command statistics at a moment.
type redisMeter struct {
	cpu  time.Duration
	cmds map[string]cmdStat
}

// cmdStat is one INFO commandstats line: calls and µs spent.
type cmdStat struct {
	calls, usec int64
}

func (s *suite) redisMeter(ctx context.Context) redisMeter {
	m := redisMeter{cpu: redisCPU(ctx, s.rdb), cmds: map[string]cmdStat{}}
	for k, v := range redisInfo(ctx, s.rdb, "commandstats") {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		var st cmdStat
		for _, kv := range strings.Split(v, ",") {
			f, val, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(val, 10, 64)
			switch f {
			case "calls":
				st.calls = n
			case "usec":
				st.usec = n
			}
		}
		m.cmds[name] = st
	}
	return m
}

// redisCost is Redis's work per operation between two meters.
type redisCost struct {
	us float64 // CPU µs per op (INFO cpu)
	// scripts and scriptUs: script calls (EVALSHA, EVAL, FCALL and their
	// read-only forms) per op and µs per call (INFO commandstats).
	scripts, scriptUs float64
	// top lists the commands that took the most time, µs per op.
	top []string
	// commands is every command per op, a script's own calls counted too
	// (INFO commandstats counts those): the work that does not move with
	// the machine.
	commands float64
}

// scriptCommands are the commandstats names of script calls.
var scriptCommands = []string{"evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro"}

func (m redisMeter) since(m0 redisMeter, ops int) redisCost {
	c := redisCost{us: float64((m.cpu - m0.cpu).Microseconds()) / float64(ops)}
	var calls, usec int64
	type per struct {
		name string
		us   float64
	}
	var all []per
	for name, st := range m.cmds {
		d := cmdStat{st.calls - m0.cmds[name].calls, st.usec - m0.cmds[name].usec}
		if d.calls <= 0 || name == "info" {
			continue
		}
		c.commands += float64(d.calls) / float64(ops)
		for _, sc := range scriptCommands {
			if name == sc {
				calls += d.calls
				usec += d.usec
			}
		}
		all = append(all, per{fmt.Sprintf("%s %.1f×%.1f", name, float64(d.calls)/float64(ops),
			float64(d.usec)/float64(d.calls)), float64(d.usec) / float64(ops)})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].us > all[j].us })
	for _, p := range all[:min(4, len(all))] {
		c.top = append(c.top, p.name)
	}
	c.scripts = float64(calls) / float64(ops)
	if calls > 0 {
		c.scriptUs = float64(usec) / float64(calls)
	}
	return c
}

func (c redisCost) note() string {
	return fmt.Sprintf("%.1f commands, %.1f of them scripts at %.1f µs; most time: %s (calls per op × µs)", c.commands, c.scripts, c.scriptUs, strings.Join(c.top, ", "))
}

// costFrontend measures the front end's CPU per create: the create load
// (tools/call of a task-policy tool, c = 16) against a child, its CPU by
// getrusage (/proc) over every create it served and its allocations
// (runtime.MemStats.Mallocs); beside it the baseline commit's front end
// (Config.BaselineExe) under the same load, alternating, when that
// harness serves creates from this run's catalog. Then the in-process
// benchmark (frontend/frontend_bench_test.go ServeCreate/asynq on this
// Redis) built at both commits (Config.FrontendTest, BaselineFrontendTest):
// CPU per create and allocations per create side by side.
func (s *suite) costFrontend(ctx context.Context) error {
	if err := s.flush(ctx); err != nil {
		return err
	}
	if err := s.publishCatalog(ctx); err != nil {
		return err
	}
	fe, err := s.spawn(ctx, RoleFrontend)
	if err != nil {
		return err
	}
	defer fe.stop()
	var base *proc
	var baseErr error
	if s.cfg.BaselineExe != "" {
		base, baseErr = spawn(ctx, s.cfg.BaselineExe, RoleFrontend, s.cfg.RedisURL)
		if base != nil {
			defer base.stop()
		}
	}
	time.Sleep(1200 * time.Millisecond) // the catalog cache sees the catalog
	const c = 16
	var cur, old []float64
	var allocs []float64
	var trouble []string // a window's errors, which would make its CPU per create meaningless
	for r := range s.cfg.Rounds {
		var m0, m1 childStats
		_ = fe.getJSON("/stats", &m0)
		row, err := s.loadRow(ctx, GroupCost, "front-end create", c, fe, fixedOp(fe.addr, toolCallRequest(fe.addr, toolNoop, metaTasks), expect200(`"resultType":"task"`)))
		if err != nil {
			return err
		}
		if fe.getJSON("/stats", &m1) == nil && row.Stats.Total > 0 {
			allocs = append(allocs, float64(m1.Mallocs-m0.Mallocs)/float64(row.Stats.Total))
		}
		cur = append(cur, row.CPU.ServerUsPerOp)
		if row.issue != "" {
			trouble = append(trouble, fmt.Sprintf("round %d: %s", r+1, row.issue))
		}
		s.roundDone(r, &Row{Figure: "front-end CPU per create", Value: row.CPU.ServerUsPerOp, Unit: "µs"})
		if base == nil {
			continue
		}
		brow, err := s.loadRow(ctx, GroupCost, "baseline create", c, base, fixedOp(base.addr, toolCallRequest(base.addr, toolNoop, metaTasks), expect200(`"resultType":"task"`)))
		if err != nil {
			baseErr = err
			base.stop()
			base = nil
			continue
		}
		old = append(old, brow.CPU.ServerUsPerOp)
		if brow.issue != "" {
			trouble = append(trouble, fmt.Sprintf("round %d, baseline: %s", r+1, brow.issue))
		}
		s.roundDone(r, &Row{Figure: "baseline front-end CPU per create", Value: brow.CPU.ServerUsPerOp, Unit: "µs"})
	}
	note := fmt.Sprintf("getrusage of the child over %d rounds of creates at c=%d (%s µs); %.0f allocations per create in the child (net/http included)",
		len(cur), c, joinFloats(cur), median(allocs))
	row := &Row{Group: GroupCost, Figure: "front-end CPU per create (child)", Unit: "µs"}
	switch {
	case len(old) == len(cur):
		row.compare(s.cfg.Baseline+" front end (child)", cur, old, &Target{"ratio<=", 1}, "", "")
		row.Note = strings.Join(nonEmpty(row.Note, note), "; ")
	default:
		row.Value = median(cur)
		why := "no -baseline-exe"
		if baseErr != nil {
			why = baseErr.Error()
		}
		row.Note = note + "; " + s.cfg.Baseline + "'s harness did not serve: " + why
	}
	row.Note = strings.Join(append([]string{row.Note}, trouble...), "; ")
	s.rep.add(row)
	fe.stop()
	return s.costFrontendInProcess(ctx)
}

// costFrontendInProcess runs ServeCreate/asynq/redis-server of both
// frontend test binaries, alternating, Rounds times, and compares their
// CPU per create (the child's getrusage over two iteration counts, the
// difference divided by the difference, so start-up cancels) and
// allocations per create.
func (s *suite) costFrontendInProcess(ctx context.Context) error {
	if s.cfg.FrontendTest == "" {
		return fmt.Errorf("no -frontend-test binary (scripts/bench builds it)")
	}
	var cpu, baseCPU, allocs, baseAllocs []float64
	for range s.cfg.Rounds {
		for _, side := range []struct {
			exe       string
			cpu, allo *[]float64
		}{{s.cfg.FrontendTest, &cpu, &allocs}, {s.cfg.BaselineFrontendTest, &baseCPU, &baseAllocs}} {
			if side.exe == "" {
				continue
			}
			us, a, err := s.benchCreate(ctx, side.exe)
			if err != nil {
				return fmt.Errorf("%s: %w", side.exe, err)
			}
			*side.cpu, *side.allo = append(*side.cpu, us), append(*side.allo, a)
		}
	}
	n := s.cfg.CostTasks
	if len(baseCPU) == 0 {
		s.costRow("front-end CPU per create (in process)", median(cpu), "µs", "", 0, nil, "no baseline test binary")
		s.costRow("allocations per create (in process)", median(allocs), "allocs", "", 0, &Target{"value<=", 150}, "")
		return nil
	}
	row := &Row{Group: GroupCost, Figure: "front-end CPU per create (in process)", Unit: "µs"}
	row.compare(s.cfg.Baseline+" in process", cpu, baseCPU, &Target{"ratio<=", 1},
		fmt.Sprintf("ServeCreate/asynq/redis-server, getrusage over %d minus %d creates", n, n/5), "")
	s.rep.add(row)
	s.rep.add(&Row{Group: GroupCost, Figure: "allocations per create (in process)", Value: median(allocs), Unit: "allocs",
		Baseline: s.cfg.Baseline + " in process", BaselineValue: median(baseAllocs), Target: &Target{"value<=", 150},
		Note: "go test -benchmem allocs/op of the same benchmark"})
	return nil
}

var allocsRe = regexp.MustCompile(`(\d+) allocs/op`)

// benchCreate runs the frontend test binary's create benchmark twice (n/5
// and n creates) and returns CPU µs and allocations per create.
func (s *suite) benchCreate(ctx context.Context, exe string) (float64, float64, error) {
	n := s.cfg.CostTasks
	run := func(iters int) (time.Duration, float64, error) {
		cmd := exec.CommandContext(ctx, exe, "-test.run", "^$", "-test.bench", "^BenchmarkServeCreate$/^asynq$/^redis-server$",
			"-test.benchmem", "-test.benchtime", strconv.Itoa(iters)+"x")
		cmd.Env = append(os.Environ(), "MCPQ_TEST_REDIS_URL="+s.cfg.RedisURL, "GOMAXPROCS=2")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return 0, 0, fmt.Errorf("%v: %.500s", err, out.String())
		}
		m := allocsRe.FindStringSubmatch(out.String())
		if m == nil {
			return 0, 0, fmt.Errorf("no allocs/op in: %.500s", out.String())
		}
		a, _ := strconv.ParseFloat(m[1], 64)
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), a, nil
	}
	small, _, err := run(n / 5)
	if err != nil {
		return 0, 0, err
	}
	large, a, err := run(n)
	if err != nil {
		return 0, 0, err
	}
	return float64((large - small).Microseconds()) / float64(n-n/5), a, nil
}

func joinFloats(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = trimFloat(x)
	}
	return strings.Join(parts, " ")
}

// costWorker measures worker CPU per no-op job (mcpq's worker against a
// bare asynq server, c = 16) and worker throughput against asynq with two
// claim-weight scripts per job (the ceiling of this architecture: asynq's
// dequeue and done plus mcpq's claim and finish) at c = 1 and 16. Each
// drain is CostJobs jobs with a fresh Redis and a fresh child.
func (s *suite) costWorker(ctx context.Context) error {
	n := s.cfg.CostJobs
	mcpqPreload := func() error { _, err := s.createTasks(ctx, n, 64, true); return err }
	asynqPreload := func() error { return s.preloadAsynq(ctx, n) }
	var rawCPU, mqCPU, ceilCPU, rawAllocs, ceilAllocs, mqAllocs []float64
	for _, c := range []int{1, 16} {
		var ceil, mq []float64
		var mqRow, ceRow *Row
		for r := range s.cfg.Rounds {
			if c == 16 {
				raw, err := s.drain(ctx, RoleAsynqWorker, c, n, asynqPreload)
				if err != nil {
					return fmt.Errorf("raw asynq: %w", err)
				}
				rawCPU = append(rawCPU, raw.CPU.ServerUsPerOp)
				rawAllocs = append(rawAllocs, raw.allocs)
				s.roundDone(r, &Row{Figure: "raw asynq worker CPU per job", Value: raw.CPU.ServerUsPerOp, Unit: "µs"})
			}
			ce, err := s.drain(ctx, RoleAsynqWorker, c, n, asynqPreload, "-scripts", "2")
			if err != nil {
				return fmt.Errorf("asynq + 2 scripts c=%d: %w", c, err)
			}
			ceil = append(ceil, ce.Value)
			ceRow = ce
			if c == 16 {
				ceilCPU = append(ceilCPU, ce.CPU.ServerUsPerOp)
				ceilAllocs = append(ceilAllocs, ce.allocs)
			}
			s.roundDone(r, &Row{Figure: fmt.Sprintf("asynq + 2 scripts c=%d", c), Value: ce.Value, Unit: "jobs/s"})
			m, err := s.drain(ctx, RoleWorker, c, n, mcpqPreload)
			if err != nil {
				return fmt.Errorf("mcpq worker c=%d: %w", c, err)
			}
			mq = append(mq, m.Value)
			mqRow = m
			if c == 16 {
				mqCPU = append(mqCPU, m.CPU.ServerUsPerOp)
				mqAllocs = append(mqAllocs, m.allocs)
			}
			s.roundDone(r, &Row{Figure: fmt.Sprintf("mcpq worker c=%d", c), Value: m.Value, Unit: "jobs/s"})
		}
		row := &Row{Group: GroupCost, Figure: fmt.Sprintf("worker throughput, no-op jobs c=%d", c), Unit: "jobs/s"}
		row.compare("asynq + 2 claim-weight scripts per job", mq, ceil, &Target{"ratio>=", 0.85},
			fmt.Sprintf("%d jobs per drain; last mcpq drain: %s; last ceiling drain: %s", n, mqRow.detail, ceRow.detail), "")
		s.rep.add(row)
	}
	row := &Row{Group: GroupCost, Figure: "worker CPU per no-op job", Unit: "µs"}
	row.compare("raw asynq worker", mqCPU, rawCPU, &Target{"ratio<=", 2},
		fmt.Sprintf("getrusage over %d-job drains at c=16 (asynq + 2 scripts: %.0f µs); heap allocations per job "+
			"(runtime.MemStats.Mallocs, medians): mcpq %.0f, raw asynq %.0f, asynq + 2 scripts %.0f",
			n, median(ceilCPU), median(mqAllocs), median(rawAllocs), median(ceilAllocs)), "")
	s.rep.add(row)
	return nil
}

// costSync times the sync path at random arrivals (40/s) three times, as
// group 6 does once, and reports the worst p50 and p99 of the three.
func (s *suite) costSync(ctx context.Context) error {
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
	cl := newClient(fe.addr, false)
	const rate, runs = 40, 3
	var p50, p99 []float64
	for range runs {
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
		p50, p99 = append(p50, ms(st.P50)), append(p99, ms(st.P99))
	}
	s.costRow(fmt.Sprintf("sync path p50, random arrivals %d/s, worst of %d runs", rate, runs), maxOf(p50), "ms", "", 0,
		&Target{"value<=", 1.6}, "runs: "+joinFloats(p50)+" ms")
	s.costRow(fmt.Sprintf("sync path p99, random arrivals %d/s, worst of %d runs", rate, runs), maxOf(p99), "ms", "", 0,
		&Target{"value<=", 5}, "runs: "+joinFloats(p99)+" ms")
	return nil
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// costBytes is group 9's Redis bytes per queued and per completed task on
// a default redis.conf, one principal, as cost-table rows.
func (s *suite) costBytes(ctx context.Context) error {
	if err := s.flush(ctx); err != nil {
		return err
	}
	if err := s.publishCatalog(ctx); err != nil {
		return err
	}
	fe, err := s.spawn(ctx, RoleFrontend)
	if err != nil {
		return err
	}
	defer fe.stop()
	from := len(s.rep.Rows)
	if err := s.bytesPerTask(ctx, fe, 1, ""); err != nil {
		return err
	}
	kept := s.rep.Rows[:from]
	for _, r := range s.rep.Rows[from:] {
		if strings.HasPrefix(r.Figure, "Redis bytes per") {
			r.Group = GroupCost
			kept = append(kept, r)
		}
	}
	s.rep.Rows = kept
	return nil
}
