package taskstate_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// TestMain stops the redis-server redistest may have started.
func TestMain(m *testing.M) { redistest.Main(m) }

// wait bounds every wait on a signal; it only decides failure, never success.
const wait = 5 * time.Second

// fakeClock is the injected clock. It starts at the real time (whole
// milliseconds) because the create script derives the Redis expiry from it,
// and a real redis-server compares that expiry with its own clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock {
	return &fakeClock{now: time.UnixMilli(time.Now().UnixMilli())}
}

// Now is the clock function handed to taskstate.Options.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is one test's store on one backend.
type env struct {
	b     *redistest.Backend
	s     *taskstate.Store
	clock *fakeClock
}

func newEnv(t *testing.T, b *redistest.Backend) *env {
	return newEnvOpts(t, b, taskstate.Options{})
}

// newEnvOpts fills in the backend's prefix and a fresh fake clock.
func newEnvOpts(t *testing.T, b *redistest.Backend, opts taskstate.Options) *env {
	t.Helper()
	c := newClock()
	opts.Prefix = b.Prefix
	opts.Clock = c.Now
	return &env{b: b, s: taskstate.New(b.Client, opts), clock: c}
}

// ctx is a context bounded by the test's life.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

const principal = "alice@example.com"

func ttl(ms int64) *int64 { return &ms }

// create makes a working task (attempt 0) and returns its ref.
func (e *env) create(t *testing.T, p taskstate.CreateParams) taskstate.Ref {
	t.Helper()
	if p.Principal == "" {
		p.Principal = principal
	}
	if p.Tool == "" {
		p.Tool = "echo"
	}
	rec, err := e.s.Create(ctx(t), p)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return rec.Ref
}

// claim claims ref's current job and fails the test on error.
func (e *env) claim(t *testing.T, ref taskstate.Ref) int64 {
	t.Helper()
	c, err := e.s.Claim(ctx(t), ref, e.get(t, ref).Resumes, taskstate.Share{})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return c.Attempt
}

// get reads ref and fails the test on error.
func (e *env) get(t *testing.T, ref taskstate.Ref) *taskstate.Record {
	t.Helper()
	r, err := e.s.Get(ctx(t), ref)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return r
}

// raw is the record hash as Redis holds it, except 'version', the count of
// published state changes, which events_test.go checks against the events,
// and the timeline's fields 'tl', 'startedAt' and 'cost', which
// timeline_test.go checks (rawWithTimeline);
// an ended task's long fields are merged back from its companion
// (Keys.TaskExtra) and its marker 'x' left out, so a record reads the same
// before and after it is compacted.
func (e *env) raw(t *testing.T, ref taskstate.Ref) map[string]string {
	t.Helper()
	m := e.rawWithTimeline(t, ref)
	delete(m, "tl")
	delete(m, "startedAt")
	delete(m, "cost")
	return m
}

// rawWithTimeline is raw with the timeline's fields.
func (e *env) rawWithTimeline(t *testing.T, ref taskstate.Ref) map[string]string {
	t.Helper()
	m, err := e.b.Client.HGetAll(ctx(t), e.s.Keys().Task(ref)).Result()
	if err != nil {
		t.Fatalf("HGETALL: %v", err)
	}
	delete(m, "version")
	if m["x"] != "" {
		x, err := e.b.Client.Get(ctx(t), e.s.Keys().TaskExtra(ref)).Result()
		if err != nil {
			t.Fatalf("GET companion: %v", err)
		}
		if err := taskstate.MergeExtra(m, x); err != nil {
			t.Fatal(err)
		}
		delete(m, "x")
	}
	return m
}

// exists reports whether the record key is in Redis.
func (e *env) exists(t *testing.T, ref taskstate.Ref) bool {
	t.Helper()
	n, err := e.b.Client.Exists(ctx(t), e.s.Keys().Task(ref)).Result()
	if err != nil {
		t.Fatalf("EXISTS: %v", err)
	}
	return n == 1
}

// outcome is a valid Finish outcome for status.
func outcome(status proto.TaskStatus) taskstate.Outcome {
	o := taskstate.Outcome{Status: status, StatusMessage: "done: " + string(status)}
	switch status {
	case proto.StatusCompleted:
		o.Result = json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)
	case proto.StatusFailed:
		o.Error = &proto.Error{Code: -32603, Message: "boom"}
	}
	return o
}

// unchanged runs op, which must be refused, and asserts that the record hash
// is byte-for-byte what it was and that nothing was published on the task's
// channel. The clock moves first, so a stray write of lastUpdatedAt or
// heartbeat would show.
func (e *env) unchanged(t *testing.T, ref taskstate.Ref, op func() error, want error) {
	t.Helper()
	w := e.watch(t, ref)
	before := e.raw(t, ref)
	e.clock.Advance(time.Second)
	if err := op(); !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	if after := e.raw(t, ref); !maps.Equal(before, after) {
		t.Fatalf("record changed on refusal:\nbefore %v\nafter  %v", before, after)
	}
	w.quiet(t)
}

// watcher is a raw Redis subscription to one task's channel, independent of
// the Hub under test.
type watcher struct {
	b       *redistest.Backend
	channel string
	ps      *redis.PubSub
	ch      <-chan *redis.Message
}

// watch subscribes to the task's events channel and returns once Redis has
// confirmed the subscription.
func (e *env) watch(t *testing.T, ref taskstate.Ref) *watcher {
	t.Helper()
	channel := e.s.Keys().Events(ref)
	ps := e.b.Client.Subscribe(ctx(t), channel)
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.Receive(ctx(t)); err != nil { // the subscribe confirmation
		t.Fatalf("subscribe: %v", err)
	}
	return &watcher{b: e.b, channel: channel, ps: ps, ch: ps.Channel()}
}

// next returns the next payload on the channel.
func (w *watcher) next(t *testing.T) string {
	t.Helper()
	select {
	case m := <-w.ch:
		return m.Payload
	case <-time.After(wait):
		t.Fatalf("no message on %s within %v", w.channel, wait)
		return ""
	}
}

// expect asserts the next payloads on the channel, in order.
// A state change is expected by its status name (eventName).
func (w *watcher) expect(t *testing.T, payloads ...string) {
	t.Helper()
	for _, want := range payloads {
		if got := w.next(t); eventName(got) != want {
			t.Fatalf("published %q, want %q", got, want)
		}
	}
}

// eventName is the status a state-change payload announces, else the
// payload itself.
func eventName(payload string) string {
	if ev := events.Decode(payload); ev.Status != "" {
		return string(ev.Status)
	}
	return payload
}

// quiet asserts that nothing was published since the last read: it publishes
// a marker and expects the marker to be the next payload (one connection
// delivers in order, so no sleep is needed).
func (w *watcher) quiet(t *testing.T) {
	t.Helper()
	marker := "marker-" + taskstate.NewID()
	if err := w.b.Publish(context.Background(), w.channel, marker); err != nil {
		t.Fatalf("PUBLISH: %v", err)
	}
	if got := w.next(t); got != marker {
		t.Fatalf("unexpected publish %q on %s", got, w.channel)
	}
}

// waitFor polls cond until it holds or the bound passes. Only for state
// nothing signals (a key's expiry inside redis-server).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", wait, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
