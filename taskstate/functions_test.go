package taskstate_test

import (
	"context"
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// TestScriptPath: miniredis has no FUNCTION, so the store runs scripts
// there; a redis-server and the cluster get the function library (on every
// primary) and FCALL; Options.NoFunctions keeps EVALSHA on a real Redis.
func TestScriptPath(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		if got := e.s.ScriptPath(); got != "" {
			t.Fatalf("before the first call: path %q", got)
		}
		e.create(t, taskstate.CreateParams{})
		want := "functions"
		if b.Mini != nil {
			want = "scripts"
		}
		if got := e.s.ScriptPath(); got != want {
			t.Fatalf("path %q, want %q", got, want)
		}
		if b.Mini != nil {
			return
		}
		forEachPrimary(t, b, func(c *redis.Client) {
			libs, err := c.FunctionList(ctx(t), redis.FunctionListQuery{LibraryNamePattern: taskstate.LibraryName()}).Result()
			if err != nil || len(libs) != 1 {
				t.Fatalf("FUNCTION LIST on %s: %v %v", c.Options().Addr, libs, err)
			}
		})
		off := newEnvOpts(t, b, taskstate.Options{NoFunctions: true})
		off.create(t, taskstate.CreateParams{})
		if got := off.s.ScriptPath(); got != "scripts" {
			t.Fatalf("NoFunctions: path %q", got)
		}
	})
}

// forEachPrimary runs fn on the backend's server, or on each primary of
// the cluster.
func forEachPrimary(t *testing.T, b *redistest.Backend, fn func(c *redis.Client)) {
	t.Helper()
	switch c := b.Client.(type) {
	case *redis.ClusterClient:
		if err := c.ForEachMaster(ctx(t), func(_ context.Context, c *redis.Client) error { fn(c); return nil }); err != nil {
			t.Fatal(err)
		}
	case *redis.Client:
		fn(c)
	default:
		t.Fatalf("client %T", b.Client)
	}
}

// TestFunctionFlushRecovered: after a FUNCTION FLUSH (a Redis restarted
// without persistence) every kind of call still works: the store loads the
// library again on "Function not found", both for a plain call (claim,
// finish) and for create's pipeline.
func TestFunctionFlushRecovered(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		ref := e.create(t, taskstate.CreateParams{})
		if e.s.ScriptPath() != "functions" {
			t.Fatalf("path %q", e.s.ScriptPath())
		}
		flush := func() {
			forEachPrimary(t, b, func(c *redis.Client) {
				if err := c.FunctionFlush(ctx(t)).Err(); err != nil {
					t.Fatal(err)
				}
			})
		}
		flush()
		c, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{})
		if err != nil {
			t.Fatalf("Claim after FUNCTION FLUSH: %v", err)
		}
		flush()
		if err := e.s.Finish(ctx(t), ref, c.Attempt, taskstate.Outcome{Status: proto.StatusCompleted,
			Result: json.RawMessage(`{"content":[]}`)}); err != nil {
			t.Fatalf("Finish after FUNCTION FLUSH: %v", err)
		}
		if got := e.get(t, ref); got.Status != proto.StatusCompleted {
			t.Fatalf("status %s", got.Status)
		}
		flush()
		e.create(t, taskstate.CreateParams{})
		if e.s.ScriptPath() != "functions" {
			t.Fatalf("path after recovery %q", e.s.ScriptPath())
		}
	})
}

// TestScriptFlushRecovered: on the scripts path, after a SCRIPT FLUSH (a
// Redis restarted without persistence) a claim, whose reply is read as
// strings (Store.runStrings), loads its script again and hands back the
// run's record.
func TestScriptFlushRecovered(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnvOpts(t, b, taskstate.Options{NoFunctions: true})
		ref := e.create(t, taskstate.CreateParams{Arguments: json.RawMessage(`{"a":1}`)})
		forEachPrimary(t, b, func(c *redis.Client) {
			if err := c.ScriptFlush(ctx(t)).Err(); err != nil {
				t.Fatal(err)
			}
		})
		c, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{})
		if err != nil {
			t.Fatalf("Claim after SCRIPT FLUSH: %v", err)
		}
		r := c.Record
		if c.Attempt != 1 || r.Status != proto.StatusWorking || r.Tool != "echo" || r.Principal != principal ||
			string(r.Arguments) != `{"a":1}` || r.StatusMessage != "Running" || r.Attempt != 1 || r.CreatedAt.IsZero() {
			t.Fatalf("claim %d, record %+v", c.Attempt, r)
		}
	})
}

// TestPathsAgree: the same life (create, claim, progress, finish) run
// through FCALL and through EVALSHA on one real Redis leaves the same
// record, timeline included (the clocks set to the same start).
func TestPathsAgree(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		start := newClock().Now()
		life := func(opts taskstate.Options) (map[string]string, string) {
			e := newEnvOpts(t, b, opts)
			e.clock.now = start // both lives at the same times
			ref := e.create(t, taskstate.CreateParams{Tool: "echo", Arguments: json.RawMessage(`{"a":1}`)})
			c, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.s.Progress(ctx(t), ref, c.Attempt, "half"); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(1500 * time.Millisecond)
			if err := e.s.Finish(ctx(t), ref, c.Attempt, taskstate.Outcome{Status: proto.StatusCompleted,
				Result: json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)}); err != nil {
				t.Fatal(err)
			}
			return e.rawWithTimeline(t, ref), e.s.ScriptPath()
		}
		fn, fnPath := life(taskstate.Options{})
		sc, scPath := life(taskstate.Options{NoFunctions: true})
		if fnPath != "functions" || scPath != "scripts" {
			t.Fatalf("paths %q %q", fnPath, scPath)
		}
		if !maps.Equal(fn, sc) {
			t.Fatalf("records differ\nfunctions %v\n  scripts %v", fn, sc)
		}
	})
}
