package catalog_test

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/events"
)

// TestServing: the catalog follows live workers. Heartbeats extend an
// entry's time (never shorten it); an entry whose time ran out is not
// served, a sweep drops it, and each change is announced once on Lists.
func TestServing(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		hub := events.NewHub(b.Client)
		t.Cleanup(func() { _ = hub.Close() })
		lists, err := hub.Subscribe(ctx(t), e.c.Keys().Lists())
		if err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		t.Cleanup(lists.Close)
		recv := func(t *testing.T, s *events.Subscription) string {
			t.Helper()
			select {
			case p := <-s.C:
				return p
			case <-time.After(5 * time.Second):
				t.Fatal("no announcement within 5s")
				return ""
			}
		}
		prompt := catalog.Entry{Kind: catalog.KindPrompt, Prompt: &proto.Prompt{Name: "p"}, Queue: "cpu"}
		defs := []catalog.Entry{{Tool: tool("render", "gpu tool"), Queue: "gpu"},
			{Tool: tool("echo", "cpu tool"), Queue: "cpu"}, prompt}
		if err := e.c.Publish(ctx(t), defs); err != nil {
			t.Fatalf("Publish: %v", err)
		}
		served := func(t *testing.T) map[string]bool {
			t.Helper()
			got, err := e.c.Entries(ctx(t))
			if err != nil {
				t.Fatalf("Tools: %v", err)
			}
			m := map[string]bool{}
			for _, d := range got {
				m[d.Key()] = d.Served(e.clock.Now())
			}
			return m
		}
		serve := func(t *testing.T, until time.Duration, keys ...string) catalog.ServingChange {
			t.Helper()
			ch, err := e.c.Serve(ctx(t), keys, e.clock.Now().Add(until))
			if err != nil {
				t.Fatalf("Serve(%v): %v", keys, err)
			}
			return ch
		}

		t.Run("published but not served", func(t *testing.T) {
			if m := served(t); len(m) != 3 || m["render"] || m["echo"] || m["prompt:p"] {
				t.Fatalf("served %v, want all three listed and none served", m)
			}
		})
		t.Run("first heartbeat adds and announces", func(t *testing.T) {
			ch := serve(t, 15*time.Second, "render")
			if !slices.Equal(ch.Added, []string{"render"}) || len(ch.Expired) != 0 ||
				!slices.Equal(ch.Announced, []string{catalog.ListTools}) {
				t.Fatalf("change %+v", ch)
			}
			if got := recv(t, lists); got != catalog.ListTools {
				t.Fatalf("Lists got %q", got)
			}
			ch = serve(t, 15*time.Second, "echo", "prompt:p")
			if !slices.Equal(ch.Added, []string{"echo", "prompt:p"}) ||
				!slices.Equal(ch.Announced, []string{catalog.ListTools, catalog.ListPrompts}) {
				t.Fatalf("change %+v", ch)
			}
			if m := served(t); !m["render"] || !m["echo"] || !m["prompt:p"] {
				t.Fatalf("served %v", m)
			}
		})
		t.Run("a repeated heartbeat changes nothing", func(t *testing.T) {
			if ch := serve(t, 15*time.Second, "render", "echo"); len(ch.Added)+len(ch.Expired)+len(ch.Announced) != 0 {
				t.Fatalf("change %+v", ch)
			}
		})
		t.Run("a shorter heartbeat does not shorten", func(t *testing.T) {
			serve(t, time.Second, "render")
			e.clock.Advance(2 * time.Second)
			if m := served(t); !m["render"] {
				t.Fatal("a 1s heartbeat of a second worker cut the first worker's 15s")
			}
		})
		t.Run("time runs out", func(t *testing.T) {
			serve(t, 15*time.Second, "echo", "prompt:p") // the cpu worker lives on
			e.clock.Advance(14 * time.Second)            // render's last beat: 15s, 16s ago
			if m := served(t); m["render"] || !m["echo"] || !m["prompt:p"] {
				t.Fatalf("served %v, want render gone", m)
			}
			ch, err := e.c.Sweep(ctx(t))
			if err != nil {
				t.Fatalf("Sweep: %v", err)
			}
			if !slices.Equal(ch.Expired, []string{"render"}) || len(ch.Added) != 0 ||
				!slices.Equal(ch.Announced, []string{catalog.ListTools}) {
				t.Fatalf("sweep %+v", ch)
			}
			if ch, _ := e.c.Sweep(ctx(t)); len(ch.Expired)+len(ch.Announced) != 0 {
				t.Fatalf("second sweep %+v: a change announced twice", ch)
			}
			if n, _ := b.Client.ZScore(ctx(t), e.c.Keys().Serving(), "render").Result(); n != 0 {
				t.Fatalf("render still in the serving set (%v)", n)
			}
		})
		t.Run("a worker back adds it again", func(t *testing.T) {
			if ch := serve(t, 15*time.Second, "render"); !slices.Equal(ch.Added, []string{"render"}) {
				t.Fatalf("change %+v", ch)
			}
			if m := served(t); !m["render"] {
				t.Fatalf("served %v", m)
			}
		})
		t.Run("completions announce no list", func(t *testing.T) {
			key := catalog.EntryKey(catalog.KindCompletion, "")
			if ch := serve(t, time.Second, key); !slices.Equal(ch.Added, []string{key}) || len(ch.Announced) != 0 {
				t.Fatalf("change %+v", ch)
			}
		})
	})
}
