package catalog_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// TestMain stops the redis-server redistest may have started.
func TestMain(m *testing.M) { redistest.Main(m) }

// env is a catalog on a test backend with a clock that moves only when a
// test advances it.
type env struct {
	c     *catalog.Catalog
	clock *fakeClock
}

func newEnv(t *testing.T, b *redistest.Backend) *env {
	t.Helper()
	c := &fakeClock{now: time.UnixMilli(time.Now().UnixMilli())}
	return &env{c: catalog.New(b.Client, b.Prefix, c.Now), clock: c}
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// ctx is a context bounded by the test's life.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func tool(name, desc string) proto.Tool {
	return proto.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func names(defs []catalog.Entry) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Tool.Name
	}
	return out
}

func TestCatalog(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		tools := func(t *testing.T) []catalog.Entry {
			t.Helper()
			defs, err := e.c.Entries(ctx(t))
			if err != nil {
				t.Fatalf("Tools: %v", err)
			}
			return defs
		}

		t.Run("empty", func(t *testing.T) {
			if defs := tools(t); len(defs) != 0 {
				t.Fatalf("Tools = %v", defs)
			}
			if err := e.c.Publish(ctx(t), nil); err != nil {
				t.Fatalf("Publish(nil): %v", err)
			}
			if n, _ := b.Client.Exists(ctx(t), e.c.Keys().Entries()).Result(); n != 0 {
				t.Fatal("publishing nothing wrote the catalog")
			}
		})

		first := e.clock.Now()
		published := []catalog.Entry{
			{Tool: tool("zeta", "last"), Policy: proto.PolicyTask, TTLMs: 120_000, Queue: "gpu"},
			{Tool: tool("alpha", "first"), Policy: proto.PolicySync, Queue: "default"},
			{Tool: tool("mid", "v1"), Policy: proto.PolicyAuto, SyncBudgetMs: 500, PollIntervalMs: 1000,
				TTLMs: catalog.UnlimitedTTL, Queue: "default"},
		}
		t.Run("publish", func(t *testing.T) {
			if err := e.c.Publish(ctx(t), published); err != nil {
				t.Fatalf("Publish: %v", err)
			}
			defs := tools(t)
			if got := names(defs); !slices.Equal(got, []string{"alpha", "mid", "zeta"}) {
				t.Fatalf("Tools names %v, want sorted", got)
			}
			for _, d := range defs {
				i := slices.IndexFunc(published, func(p catalog.Entry) bool { return p.Tool.Name == d.Tool.Name })
				want := published[i]
				if !d.PublishedAt.Equal(first) {
					t.Errorf("%s PublishedAt %v, want the clock %v", d.Tool.Name, d.PublishedAt, first)
				}
				if d.Policy != want.Policy || d.SyncBudgetMs != want.SyncBudgetMs || d.TTLMs != want.TTLMs ||
					d.PollIntervalMs != want.PollIntervalMs || d.Queue != want.Queue ||
					d.Tool.Description != want.Tool.Description || string(d.Tool.InputSchema) != string(want.Tool.InputSchema) {
					t.Errorf("Tools returned %+v, published %+v", d, want)
				}
			}
			if !published[0].PublishedAt.IsZero() {
				t.Error("Publish wrote into the caller's slice")
			}
		})

		t.Run("republish replaces by name", func(t *testing.T) {
			e.clock.Advance(time.Minute)
			if err := e.c.Publish(ctx(t), []catalog.Entry{{Tool: tool("mid", "v2"), Queue: "other"}}); err != nil {
				t.Fatalf("Publish: %v", err)
			}
			defs := tools(t)
			if got := names(defs); !slices.Equal(got, []string{"alpha", "mid", "zeta"}) {
				t.Fatalf("Tools names %v", got)
			}
			mid := defs[1]
			if mid.Tool.Description != "v2" || mid.Queue != "other" || mid.Policy != "" || mid.SyncBudgetMs != 0 ||
				!mid.PublishedAt.Equal(e.clock.Now()) {
				t.Fatalf("republished mid = %+v", mid)
			}
			if !defs[0].PublishedAt.Equal(first) || defs[0].Tool.Description != "first" {
				t.Fatalf("alpha changed: %+v", defs[0])
			}
		})

		t.Run("undecodable entries are skipped", func(t *testing.T) {
			if err := b.Client.HSet(ctx(t), e.c.Keys().Entries(), "junk", "not json",
				"nameless", `{"tool":{"name":""},"queue":"q"}`).Err(); err != nil {
				t.Fatal(err)
			}
			if got := names(tools(t)); !slices.Equal(got, []string{"alpha", "mid", "zeta"}) {
				t.Fatalf("Tools names %v", got)
			}
		})

		t.Run("catalog is per prefix", func(t *testing.T) {
			other := catalog.New(b.Client, b.Prefix+"other:", e.clock.Now)
			defs, err := other.Entries(ctx(t))
			if err != nil || len(defs) != 0 {
				t.Fatalf("other prefix sees %v, %v", names(defs), err)
			}
		})
	})
}
