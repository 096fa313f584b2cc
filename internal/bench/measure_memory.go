package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// redisMemory (group 9) measures Redis bytes per live task (tasks created
// through tools/call, queued and then completed) and tasks/get latency
// with LiveSmall and LiveLarge live tasks.
func (s *suite) redisMemory(ctx context.Context) error {
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
	if err := s.bytesPerTask(ctx, fe, 1, ""); err != nil {
		return err
	}
	// The same tasks spread over many principals, as a multi-tenant
	// deployment has them: each owner's indexes are then small sorted sets.
	if err := s.flush(ctx); err != nil {
		return err
	}
	if err := s.publishCatalog(ctx); err != nil {
		return err
	}
	if err := s.bytesPerTask(ctx, fe, memTenants, ""); err != nil {
		return err
	}
	// Once more with Redis keeping hashes of values up to 1 KiB compact
	// (listpack; the default limit is 64 B, which a result or an asynq
	// message passes), a redis.conf setting; restored afterwards.
	prev, err := s.rdb.ConfigGet(ctx, listpackValue).Result()
	if err != nil {
		return err
	}
	if err := s.rdb.ConfigSet(ctx, listpackValue, "1024").Err(); err != nil {
		return err
	}
	err = s.flush(ctx)
	if err == nil {
		err = s.publishCatalog(ctx)
	}
	if err == nil {
		err = s.bytesPerTask(ctx, fe, memTenants, listpackValue+" 1024")
	}
	if rerr := s.rdb.ConfigSet(ctx, listpackValue, prev[listpackValue]).Err(); err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	return s.liveTasks(ctx, fe)
}

// listpackValue is the redis.conf setting that bounds a compact hash's values.
const listpackValue = "hash-max-listpack-value"

// memTenants is how many principals share the tasks of the multi-tenant
// bytes-per-task figure.
const memTenants = 1000

// argsLen is the length of the arguments every bench task carries ({}).
const argsLen = 2

// bytesPerTask creates MemTasks tasks through tools/call, spread evenly
// over tenants principals, and measures Redis bytes per task while they
// are queued and once a worker has completed them.
func (s *suite) bytesPerTask(ctx context.Context, fe *proc, tenants int, setting string) error {
	n := s.cfg.MemTasks
	who := "1 principal"
	if tenants > 1 {
		who = fmt.Sprintf("%d principals, %d tasks each", tenants, n/tenants)
	}
	if setting != "" {
		who += ", " + setting
	}
	// Warm up first (tasks/get of unknown ids), so the front end's Redis
	// connections and their buffers exist before the baseline is read.
	unknown := []string{taskstate.NewID()}
	if _, err := Load(ctx, 16, 0, 300*time.Millisecond, idOp(fe.addr, newIDTemplate(fe.addr, "tasks/get"), unknown,
		func(int, []byte) error { return nil })); err != nil {
		return err
	}
	before := redisUsedMemory(ctx, s.rdb)
	ids, err := httpCreate(ctx, fe.addr, n, 16, tenants)
	if err != nil {
		return err
	}
	queued := redisUsedMemory(ctx, s.rdb) - before
	ref := taskstate.Ref{Owner: taskstate.OwnerTag(tenant(0, tenants)), ID: ids[0]}
	asynqQueue := queue.Keys{Prefix: s.keys.Prefix}.Queue(worker.DefaultQueue)
	rec, _ := s.rdb.MemoryUsage(ctx, s.keys.Task(ref), 0).Result()
	job, _ := s.rdb.MemoryUsage(ctx, "asynq:{"+asynqQueue+"}:t:"+ref.ID, 0).Result()
	perQueued := float64(queued)/float64(n) - argsLen
	s.rep.add(&Row{Group: "9", Figure: "Redis bytes per queued task beyond args, " + who, Value: perQueued, Unit: "B",
		Target: &Target{"value<=", 1024},
		Note:   fmt.Sprintf("used_memory delta over %d tools/call creates: record, its index entries and asynq job", n)})
	if tenants == 1 || setting != "" {
		s.rep.add(&Row{Group: "9", Figure: "MEMORY USAGE of a working task record" + suffix(setting), Value: float64(rec), Unit: "B",
			Note: "the hash alone, arguments {}"})
		s.rep.add(&Row{Group: "9", Figure: "MEMORY USAGE of its queued asynq job" + suffix(setting), Value: float64(job), Unit: "B",
			Note: "asynq's task hash; gone once the job succeeds"})
	}

	// Complete every task with a worker, then measure again.
	wk, err := s.spawn(ctx, RoleWorker, "-concurrency", "64")
	if err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var c childCount
		if err := wk.getJSON("/count", &c); err != nil {
			wk.stop()
			return err
		}
		p, _ := s.rdb.LLen(ctx, "asynq:{"+asynqQueue+"}:pending").Result()
		a, _ := s.rdb.LLen(ctx, "asynq:{"+asynqQueue+"}:active").Result()
		w, _ := s.rdb.Get(ctx, "asynq:{"+asynqQueue+"}:mcpq:n").Int64() // waiting by principal (internal/queue/fair.go)
		if c.Handled >= int64(n) && p == 0 && a == 0 && w <= 0 {
			break
		}
		if time.Now().After(deadline) {
			wk.stop()
			return fmt.Errorf("worker completed %d of %d tasks in 2 minutes", c.Handled, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wk.stop()
	completed := redisUsedMemory(ctx, s.rdb) - before
	status, _ := s.rdb.HGet(ctx, s.keys.Task(ref), "status").Result()
	if status != "completed" {
		return fmt.Errorf("task %s is %q after the worker drained the queue", ref.ID, status)
	}
	// An ended task's record keeps its long values (the result here) in a
	// companion key (taskstate.Keys.TaskExtra); Get merges them back.
	done, err := s.store.Get(ctx, ref)
	if err != nil {
		return err
	}
	resultLen := int64(len(done.Result))
	recDone, _ := s.rdb.MemoryUsage(ctx, s.keys.Task(ref), 0).Result()
	extraDone, _ := s.rdb.MemoryUsage(ctx, s.keys.TaskExtra(ref), 0).Result()
	encoding, _ := s.rdb.ObjectEncoding(ctx, s.keys.Task(ref)).Result()
	s.rep.add(&Row{Group: "9", Figure: "Redis bytes per completed task beyond args and result, " + who,
		Value: float64(completed)/float64(n) - argsLen - float64(resultLen), Unit: "B", Target: &Target{"value<=", 1024},
		Note: fmt.Sprintf("used_memory delta after the worker completed all %d (result %d B)", n, resultLen)})
	if tenants == 1 || setting != "" {
		s.rep.add(&Row{Group: "9", Figure: "MEMORY USAGE of a completed task record" + suffix(setting), Value: float64(recDone + extraDone), Unit: "B",
			Note: fmt.Sprintf("hash (%s) %d B + companion %d B; result %d B included, arguments dropped at the end",
				encoding, recDone, extraDone, resultLen)})
	}
	return nil
}

func suffix(setting string) string {
	if setting == "" {
		return ""
	}
	return ", " + setting
}

// tenant is the principal of request i when tenants principals take turns
// (the front end's anonymous principal when there is one).
func tenant(i, tenants int) string {
	if tenants <= 1 {
		return frontend.AnonymousPrincipal
	}
	return fmt.Sprintf("tenant-%d", i%tenants)
}

// httpCreate makes n noop tasks through the front end's tools/call and
// returns their ids.
func httpCreate(ctx context.Context, addr string, n, conc, tenants int) ([]string, error) {
	reqs := make([][]byte, max(tenants, 1))
	for i := range reqs {
		reqs[i] = toolCallRequest(addr, toolNoop, metaTasks, header{tenantHeader, tenant(i, tenants)})
	}
	out := make([]string, n)
	conns := make([]*rawConn, conc)
	for i := range conns {
		conns[i] = newRawConn(addr)
		defer conns[i].close()
	}
	worker := make(chan int, conc)
	for i := range conc {
		worker <- i
	}
	return out, parallel(ctx, n, conc, func(i int) error {
		w := <-worker
		defer func() { worker <- w }()
		st, body, err := conns[w].do(reqs[i%len(reqs)])
		if err != nil {
			return err
		}
		k := bytes.Index(body, []byte(`"taskId":"`))
		if st != 200 || k < 0 || len(body) < k+10+len(placeholderID) {
			return fmt.Errorf("HTTP %d: %.300s", st, body)
		}
		out[i] = string(body[k+10 : k+10+len(placeholderID)])
		return nil
	})
}

// liveTasks compares tasks/get latency (one request at a time, random ids)
// with LiveSmall live tasks before and after a run with LiveLarge live
// tasks; the small point is measured on both sides of the large one and
// averaged, so drift does not decide the ratio.
func (s *suite) liveTasks(ctx context.Context, fe *proc) error {
	tpl := newIDTemplate(fe.addr, "tasks/get")
	measure := func(ids []string) (*Stats, error) {
		st, err := Load(ctx, 1, s.cfg.Warmup, 2*s.cfg.Duration, idOp(fe.addr, tpl, ids, expect200(`"status":"working"`)))
		return &st, err
	}
	small := func() (*Stats, error) {
		if err := s.flush(ctx); err != nil {
			return nil, err
		}
		s.liveIDs = nil
		ids, _, err := s.loadRecords(ctx, s.cfg.LiveSmall)
		if err != nil {
			return nil, err
		}
		return measure(ids)
	}
	a, err := small()
	if err != nil {
		return err
	}
	if s.cfg.LiveLarge <= s.cfg.LiveSmall {
		s.rep.Skipped = append(s.rep.Skipped, "group 9: tasks/get at the large live-task count (-live-large 0)")
		s.rep.add(&Row{Group: "9", Figure: fmt.Sprintf("tasks/get p50, %d live tasks", s.cfg.LiveSmall), Value: ms(a.P50), Unit: "ms", Stats: a})
		return nil
	}
	before := redisUsedMemory(ctx, s.rdb)
	t0 := time.Now()
	_, n, err := s.loadRecords(ctx, s.cfg.LiveLarge-s.cfg.LiveSmall)
	if err != nil {
		return err
	}
	loadTime := time.Since(t0)
	perRecord := float64(redisUsedMemory(ctx, s.rdb)-before) / float64(n)
	b, err := measure(s.liveIDs)
	if err != nil {
		return err
	}
	a2, err := small()
	if err != nil {
		return err
	}
	if err := s.flush(ctx); err != nil { // give the memory back
		return err
	}
	base := (a.P50 + a2.P50) / 2
	smallFig := fmt.Sprintf("tasks/get p50, %d live tasks", s.cfg.LiveSmall)
	s.rep.add(&Row{Group: "9", Figure: smallFig, Value: ms(base), Unit: "ms", Stats: a,
		Note: fmt.Sprintf("mean of before (%.3f) and after (%.3f); p99 %.3f / %.3f ms", ms(a.P50), ms(a2.P50), ms(a.P99), ms(a2.P99))})
	s.rep.add(&Row{Group: "9", Figure: fmt.Sprintf("tasks/get p50, %d live tasks", s.cfg.LiveLarge), Value: ms(b.P50), Unit: "ms",
		Stats: b, Baseline: smallFig, BaselineValue: ms(base), Target: &Target{"ratio<=", 1.2},
		Note: fmt.Sprintf("p99 %.3f ms; c=1, random ids; %d records loaded in %.1f s", ms(b.P99), n, loadTime.Seconds())})
	s.rep.add(&Row{Group: "9", Figure: "Redis bytes per loaded live record", Value: perRecord, Unit: "B",
		Note: "used_memory delta / records: a copy of a created record and its entries in the owner's indexes"})
	return nil
}

// loadRecords writes n live task records fast. One record is made by
// Store.Create (the real create script); the rest are byte-identical
// copies of it (DUMP/RESTORE, same absolute expiry), each added to every
// sorted set of the owner that the create script put the original in
// (deadline, live and task indexes), with the same score. It returns their
// ids (also appended to s.liveIDs) and the number written.
func (s *suite) loadRecords(ctx context.Context, n int) ([]string, int, error) {
	if n <= 0 {
		return nil, 0, nil
	}
	tmpl, err := s.store.Create(ctx, createParams(taskstate.NewID()))
	if err != nil {
		return nil, 0, err
	}
	key := s.keys.Task(tmpl.Ref)
	payload, err := s.rdb.Dump(ctx, key).Result()
	if err != nil {
		return nil, 0, err
	}
	expireAt, err := s.rdb.PExpireTime(ctx, key).Result()
	if err != nil {
		return nil, 0, err
	}
	indexes, err := s.indexesOf(ctx, tmpl.Ref)
	if err != nil {
		return nil, 0, err
	}
	ids := make([]string, n)
	ids[0] = tmpl.Ref.ID
	for i := 1; i < n; i++ {
		ids[i] = taskstate.NewID()
	}
	const batch = 2000
	err = parallel(ctx, (n+batch-1)/batch, 3, func(b int) error {
		pipe := s.rdb.Pipeline()
		for i := max(1, b*batch); i < min(n, (b+1)*batch); i++ {
			pipe.Do(ctx, "RESTORE", s.keys.Task(taskstate.Ref{Owner: anonymousOwner, ID: ids[i]}),
				expireAt.Milliseconds(), payload, "ABSTTL")
			for _, ix := range indexes {
				pipe.ZAdd(ctx, ix.key, redis.Z{Score: ix.score, Member: ids[i]})
			}
		}
		_, err := pipe.Exec(ctx)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	s.liveIDs = append(s.liveIDs, ids...)
	return ids, n, nil
}

// index is a sorted set that holds a task id, and the id's score there.
type index struct {
	key   string
	score float64
}

// indexesOf finds every sorted set of the task's owner that holds its id.
func (s *suite) indexesOf(ctx context.Context, ref taskstate.Ref) ([]index, error) {
	var out []index
	iter := s.rdb.Scan(ctx, 0, s.keys.Prefix+"{"+ref.Owner+"}:*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if t, _ := s.rdb.Type(ctx, k).Result(); t != "zset" {
			continue
		}
		if sc, err := s.rdb.ZScore(ctx, k, ref.ID).Result(); err == nil {
			out = append(out, index{k, sc})
		}
	}
	if err := iter.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("the created task is in no index")
	}
	return out, nil
}

// residentMemory (group 10) reports the front end's and the worker's
// resident memory at idle and under load, as sampled by the other groups.
func (s *suite) residentMemory(ctx context.Context) error {
	if s.feIdle == nil {
		fe, err := s.spawn(ctx, RoleFrontend)
		if err != nil {
			return err
		}
		time.Sleep(time.Second)
		if m, err := fe.memory(); err == nil {
			s.feIdle = &m
		}
		fe.stop()
	}
	if s.wkIdle == nil {
		wk, err := s.spawn(ctx, RoleWorker)
		if err != nil {
			return err
		}
		time.Sleep(time.Second)
		if m, err := wk.memory(); err == nil {
			s.wkIdle = &m
		}
		wk.stop()
	}
	row := func(fig string, m *memory, what string) {
		if m == nil {
			s.rep.Skipped = append(s.rep.Skipped, "group 10: "+fig+" (the group that samples it did not run)")
			return
		}
		s.rep.add(&Row{Group: "10", Figure: fig, Value: float64(m.RSSKiB) / 1024, Unit: "MiB",
			Note: what + "; " + goMemNote(m)})
	}
	row("front-end RSS idle", s.feIdle, "1 s after start")
	row("front-end RSS under load", s.feLoad, fmt.Sprintf("highest sample during create and tasks/get at c=%d", s.maxConc()))
	row("worker RSS idle", s.wkIdle, "1 s after start, concurrency 10")
	row("worker RSS under load", s.wkLoad, fmt.Sprintf("highest sample while draining no-op jobs at concurrency %d", s.maxConc()))
	return nil
}
