package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
)

// sentinelMaster is the name the sentinels monitor the primary under.
const sentinelMaster = "mcpqprimary"

// TestSentinelFailover runs mcpq frontend and worker processes on a
// Sentinel-managed primary with one replica and three sentinels, with
// --wait-replicas 1. While clients create tasks without pause, the
// sentinels fail the primary over to the replica. Every task a client got a
// CreateTaskResult for must still be found by tasks/get afterwards and
// reach a terminal state, and the system must go on accepting tasks.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	primary, replicas := redistest.StartReplicated(t, 1)
	var sentinels []*redistest.Server
	var addrs []string
	for range 3 {
		s := redistest.StartSentinel(t, sentinelMaster, primary.Addr)
		sentinels = append(sentinels, s)
		addrs = append(addrs, s.Addr)
	}
	// Deliveries lost in the switch wait for their takeover; the bound is
	// generous for that (a failure bound, not a speed check).
	ctx := withinLong(t, 5*time.Minute)
	began := time.Now()
	phase := func(what string) { t.Logf("%6.1fs %s", time.Since(began).Seconds(), what) }
	waitSentinelsReady(t, ctx, sentinels, replicas[0].Addr)
	phase("sentinels ready")

	env := []string{"REDIS_URL=redis+sentinel://" + strings.Join(addrs, ",") + "/" + sentinelMaster + "/0",
		"MCPQ_PREFIX=sentinel:"}
	start(t, "worker", env, nil, "worker", "--fixtures", "conformance", "--concurrency", "100")
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	start(t, "frontend", env, nil, "frontend", "--allow-anonymous", "--addr", addr,
		"--wait-replicas", "1", "--wait-timeout", "2s")
	waitHealthy(t, "http://"+addr)
	url := "http://" + addr + "/mcp"
	waitCatalog(t, url, "slow_compute")
	phase("mcpq ready")

	// Clients create one-second tasks back to back, recording every
	// acknowledged task and every refusal.
	var (
		mu          sync.Mutex
		acked       []string
		afterSw     int // acknowledged after the failover was seen complete
		switched    bool
		syncAnswers int
		refusals    = map[string]int{}
	)
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := taskClient(url)
			for loadCtx.Err() == nil {
				a, err := c.CallTool(loadCtx, "slow_compute", map[string]any{"seconds": 1, "label": "failover"})
				mu.Lock()
				switch {
				case err != nil:
					if loadCtx.Err() == nil {
						refusals[firstWords(err.Error())]++
					}
				case a.Task != nil && a.Task.TaskID != "":
					acked = append(acked, a.Task.TaskID)
					if switched {
						afterSw++
					}
				case a.Result != nil && !a.Result.IsError:
					syncAnswers++ // finished within the tool's sync budget: no task to follow
				default:
					refusals[fmt.Sprintf("not a task: %s", toJSONString(a))]++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(20 * time.Millisecond) // do not spin on a Redis that is switching
				}
			}
		}()
	}
	count := func() (int, int) { mu.Lock(); defer mu.Unlock(); return len(acked), afterSw }
	waitUntil(t, ctx, "20 tasks acknowledged before the failover", func() bool { n, _ := count(); return n >= 20 })

	// The failover: the sentinels promote the replica and turn the old
	// primary into its replica.
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0].Addr})
	defer sc.Close()
	phase("failing over")
	if err := sc.Failover(ctx, sentinelMaster).Err(); err != nil {
		t.Fatalf("SENTINEL FAILOVER: %v", err)
	}
	waitUntil(t, ctx, "every sentinel to name the replica as primary", func() bool {
		for _, s := range sentinels {
			c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
			a, err := c.GetMasterAddrByName(ctx, sentinelMaster).Result()
			c.Close()
			if err != nil || len(a) != 2 || a[0]+":"+a[1] != replicas[0].Addr {
				return false
			}
		}
		return true
	})
	mu.Lock()
	switched = true
	mu.Unlock()
	phase("failed over")
	waitUntil(t, ctx, "20 tasks acknowledged after the failover", func() bool { _, n := count(); return n >= 20 })
	stopLoad()
	wg.Wait()
	phase("load stopped")

	mu.Lock()
	ids := append([]string(nil), acked...)
	t.Logf("%d tasks acknowledged (%d after the failover), %d calls answered at once; refused: %v",
		len(ids), afterSw, syncAnswers, refusals)
	mu.Unlock()

	// Every acknowledged task is still there and ends.
	c := taskClient(url)
	ended := map[proto.TaskStatus]int{}
	for _, id := range ids {
		g := waitTask(t, ctx, c, id, "a terminal state", func(g *proto.GetTaskResult) bool { return g.Status.Terminal() })
		ended[g.Status]++
	}
	phase(fmt.Sprintf("acknowledged tasks ended: %v", ended))
}

// waitSentinelsReady waits until every sentinel sees the primary, its
// replica and the two other sentinels, so a failover can be agreed.
func waitSentinelsReady(t *testing.T, ctx context.Context, sentinels []*redistest.Server, replica string) {
	t.Helper()
	waitUntil(t, ctx, "the sentinels to know the replica and each other", func() bool {
		for _, s := range sentinels {
			c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
			reps, err1 := c.Replicas(ctx, sentinelMaster).Result()
			peers, err2 := c.Sentinels(ctx, sentinelMaster).Result()
			c.Close()
			if err1 != nil || err2 != nil || len(peers) != len(sentinels)-1 || !hasReplica(reps, replica) {
				return false
			}
		}
		return true
	})
}

// hasReplica reports whether SENTINEL REPLICAS lists addr as a healthy
// replica.
func hasReplica(reps []map[string]string, addr string) bool {
	for _, r := range reps {
		if r["ip"]+":"+r["port"] == addr && r["flags"] == "slave" && r["master-link-status"] == "ok" {
			return true
		}
	}
	return false
}

// waitUntil polls cond until it holds; ctx bounds the wait (a failure
// bound, not a speed check).
func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s: %v", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// withinLong is within with a longer bound.
func withinLong(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// toJSONString is v as JSON, shortened, for a log line.
func toJSONString(v any) string {
	b, _ := json.Marshal(v)
	return firstWords(string(b))
}

// firstWords shortens an error to its kind, for the refusal tally.
func firstWords(s string) string {
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
