package frontend_test

// The front end across Redis outages: listen streams and sync waits pick up
// again, and a state change made while they were cut off is not lost.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// cutProxy forwards TCP connections to a Redis; cut drops every connection
// and refuses new ones until mend, so the front end behind it loses Redis
// while the test still reaches it directly.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go p.serve()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
	}
}

// setCut cuts (true) or mends (false) the front end's way to Redis.
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

// TestResyncAfterCut: while the front end is cut off from Redis, a listened
// task and a task a sync call waits for both end (their events are lost).
// Once the front end reaches Redis again, the listen stream shows the end
// (the intermediate states collapse into it) and the sync call answers.
func TestResyncAfterCut(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		if _, cluster := b.Client.(*redis.ClusterClient); cluster {
			t.Skip("the cut proxy stands before one server; cluster clients follow redirects to every node")
		}
		opts, err := redis.ParseURL(b.URL)
		if err != nil {
			t.Fatal(err)
		}
		proxy := newCutProxy(t, opts.Addr)
		feRedis := redis.NewClient(&redis.Options{Addr: proxy.addr(), MaxRetries: -1})
		t.Cleanup(func() { feRedis.Close() })
		e := newEnv(t, b, func(c *frontend.Config) { c.Redis = feRedis })
		e.enq.setHold(true) // the test plays the worker, on its own connection
		ts := httptest.NewServer(e.h)
		defer ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		defer cancel()

		listened := e.createTask(toolTaskJob)
		e.enq.nextJob(t)
		stream := openTaskStream(t, ctx, ts.URL, []string{listened})
		stream.until(t, ctx, func(string, string) bool { return true }) // the snapshot

		syncCall := make(chan reply, 1)
		go func() {
			body := rpc("s", proto.MethodToolsCall, metaPlain, map[string]any{"name": toolSlow})
			syncCall <- e.with(t).serve(ctx, http.MethodPost, []byte(body), deriveHeaders([]byte(body)))
		}()
		waited := e.enq.nextJob(t).Ref // created, and its request waits on its events

		proxy.setCut(true)
		done := outcome(proto.StatusCompleted)
		for _, r := range []taskstate.Ref{ref(listened), waited} {
			c, err := e.store.Claim(ctx, r, 0, taskstate.Share{})
			if err != nil {
				t.Fatalf("claim: %v", err)
			}
			if err := e.store.Finish(ctx, r, c.Attempt, done); err != nil {
				t.Fatalf("finish: %v", err)
			}
		}
		proxy.setCut(false)

		stream.until(t, ctx, func(id, state string) bool { return strings.HasPrefix(state, "completed/") })
		if got, want := strings.Join(stream.seen[listened], " "), "working/Queued completed/"+done.StatusMessage; got != want {
			t.Errorf("listen stream across the cut: %q, want %q", got, want)
		}
		select {
		case rep := <-syncCall:
			mustMatch(t, rep, 200, `{"id":"s","result":{"content":[{"type":"text","text":"ok"}]}}`)
		case <-ctx.Done():
			t.Fatal("the sync call did not answer after the front end reached Redis again")
		}
	})
}

// TestRedisRestart: a real redis-server killed and started again (its data
// kept by its append-only file). Meanwhile /readyz says 503 and calls
// answer 503 with Retry-After; afterwards /readyz is 200 again, the open
// listen stream shows a task ending, and a sync call waiting through the
// outage answers.
func TestRedisRestart(t *testing.T) {
	p := redistest.StartPrivate(t)
	e := newEnv(t, p.Backend, nil)
	e.enq.setHold(true)
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()

	listened := e.createTask(toolTaskJob)
	e.enq.nextJob(t)
	stream := openTaskStream(t, ctx, ts.URL, []string{listened})
	stream.until(t, ctx, func(string, string) bool { return true }) // the snapshot
	syncCall := make(chan reply, 1)
	go func() {
		body := rpc("s", proto.MethodToolsCall, metaPlain, map[string]any{"name": toolSlow})
		syncCall <- e.with(t).serve(ctx, http.MethodPost, []byte(body), deriveHeaders([]byte(body)))
	}()
	waited := e.enq.nextJob(t).Ref

	p.Kill(t)
	readyz := func() int {
		res, err := ts.Client().Get(ts.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := readyz(); code != http.StatusServiceUnavailable {
		t.Errorf("readyz with Redis killed: %d", code)
	}
	rep := e.taskRPC(proto.MethodTasksGet, metaTasks, listened)
	if rep.Status != http.StatusServiceUnavailable || rep.Header.Get("Retry-After") == "" {
		t.Errorf("tasks/get with Redis killed: %d Retry-After %q %s", rep.Status, rep.Header.Get("Retry-After"), rep.Body)
	}

	p.Start(t)
	for readyz() != http.StatusOK { // polled, under the test's deadline
		if ctx.Err() != nil {
			t.Fatal("readyz not 200 after Redis came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	done := outcome(proto.StatusCompleted)
	for _, r := range []taskstate.Ref{ref(listened), waited} {
		c, err := e.store.Claim(ctx, r, 0, taskstate.Share{})
		if err != nil {
			t.Fatalf("claim after the restart: %v", err)
		}
		if err := e.store.Finish(ctx, r, c.Attempt, done); err != nil {
			t.Fatalf("finish after the restart: %v", err)
		}
	}
	// Whether the hub had subscribed again before the finish (the events
	// arrive) or after (its resync reads the records), both are shown.
	stream.until(t, ctx, func(id, state string) bool { return strings.HasPrefix(state, "completed/") })
	if got := stream.seen[listened]; got[0] != "working/Queued" || got[len(got)-1] != "completed/"+done.StatusMessage {
		t.Errorf("listen stream across the restart: %q", got)
	}
	select {
	case rep := <-syncCall:
		mustMatch(t, rep, 200, `{"id":"s","result":{"content":[{"type":"text","text":"ok"}]}}`)
	case <-ctx.Done():
		t.Fatal("the sync call did not answer after Redis came back")
	}
}

// TestEnqueueUnavailable: Redis goes away between the record write and the
// enqueue. The call answers 503 with Retry-After, and the record is not
// left half-made: it is ended "failed" (when Redis is back for that write;
// otherwise it stays working and the workers' recovery loop enqueues it).
func TestEnqueueUnavailable(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), nil)
	e.enq.setErr(fmt.Errorf("enqueue: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}))
	rep := e.callTool(metaTasks, toolTaskJob, nil)
	if rep.Status != http.StatusServiceUnavailable || rep.Header.Get("Retry-After") == "" {
		t.Errorf("enqueue with Redis gone: HTTP %d Retry-After %q", rep.Status, rep.Header.Get("Retry-After"))
	}
	mustMatch(t, rep, rep.Status, `{"id":1,"result":"<absent>","error":{"code":-32603,"message":"<string>"}}`)
	j := e.enq.nextJob(t)
	mustMatch(t, e.taskRPC(proto.MethodTasksGet, metaTasks, j.Ref.ID), 200,
		`{"result":{"status":"failed","statusMessage":"Could not be scheduled"}}`)
}
