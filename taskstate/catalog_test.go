package taskstate_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

func tool(name, desc string) proto.Tool {
	return proto.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func names(defs []taskstate.ToolDef) []string {
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
		tools := func(t *testing.T) []taskstate.ToolDef {
			t.Helper()
			defs, err := e.s.Tools(ctx(t))
			if err != nil {
				t.Fatalf("Tools: %v", err)
			}
			return defs
		}

		t.Run("empty", func(t *testing.T) {
			if defs := tools(t); len(defs) != 0 {
				t.Fatalf("Tools = %v", defs)
			}
			if err := e.s.PublishTools(ctx(t), nil); err != nil {
				t.Fatalf("PublishTools(nil): %v", err)
			}
			if n, _ := b.Client.Exists(ctx(t), e.s.Keys().Catalog()).Result(); n != 0 {
				t.Fatal("publishing nothing wrote the catalog")
			}
		})

		first := e.clock.Now()
		published := []taskstate.ToolDef{
			{Tool: tool("zeta", "last"), Policy: proto.PolicyTask, TTLMs: 120_000, Queue: "gpu"},
			{Tool: tool("alpha", "first"), Policy: proto.PolicySync, Queue: "default"},
			{Tool: tool("mid", "v1"), Policy: proto.PolicyAuto, SyncBudgetMs: 500, PollIntervalMs: 1000,
				TTLMs: taskstate.UnlimitedTTL, Queue: "default"},
		}
		t.Run("publish", func(t *testing.T) {
			if err := e.s.PublishTools(ctx(t), published); err != nil {
				t.Fatalf("PublishTools: %v", err)
			}
			defs := tools(t)
			if got := names(defs); !slices.Equal(got, []string{"alpha", "mid", "zeta"}) {
				t.Fatalf("Tools names %v, want sorted", got)
			}
			for _, d := range defs {
				i := slices.IndexFunc(published, func(p taskstate.ToolDef) bool { return p.Tool.Name == d.Tool.Name })
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
				t.Error("PublishTools wrote into the caller's slice")
			}
		})

		t.Run("republish replaces by name", func(t *testing.T) {
			e.clock.Advance(time.Minute)
			if err := e.s.PublishTools(ctx(t), []taskstate.ToolDef{{Tool: tool("mid", "v2"), Queue: "other"}}); err != nil {
				t.Fatalf("PublishTools: %v", err)
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
			if err := b.Client.HSet(ctx(t), e.s.Keys().Catalog(), "junk", "not json",
				"nameless", `{"tool":{"name":""},"queue":"q"}`).Err(); err != nil {
				t.Fatal(err)
			}
			if got := names(tools(t)); !slices.Equal(got, []string{"alpha", "mid", "zeta"}) {
				t.Fatalf("Tools names %v", got)
			}
		})

		t.Run("catalog is per prefix", func(t *testing.T) {
			other := taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix + "other:", Clock: e.clock.Now})
			defs, err := other.Tools(ctx(t))
			if err != nil || len(defs) != 0 {
				t.Fatalf("other prefix sees %v, %v", names(defs), err)
			}
		})
	})
}

func TestStoreDefaults(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		s := taskstate.New(b.Client, taskstate.Options{})
		if s.Keys().Prefix != taskstate.DefaultPrefix {
			t.Fatalf("default prefix %q", s.Keys().Prefix)
		}
		if d := time.Since(s.Now()); d < 0 || d > time.Minute {
			t.Fatalf("default clock is %v off", d)
		}
		c := newClock()
		if got := taskstate.New(b.Client, taskstate.Options{Clock: c.Now}).Now(); !got.Equal(c.Now()) {
			t.Fatalf("Now() = %v, want the injected clock", got)
		}
	})
}
