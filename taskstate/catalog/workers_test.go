package catalog_test

import (
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// TestWorkers: the operator view lists a worker while its heartbeat
// holds, not after its time ran out or it said goodbye; an hour later
// another worker's heartbeat drops its entry.
func TestWorkers(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		names := func() []string {
			t.Helper()
			ws, err := e.c.Workers(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			out := []string{}
			for _, w := range ws {
				out = append(out, w.Name)
			}
			return out
		}
		beat := func(name string) {
			t.Helper()
			now := e.clock.Now()
			err := e.c.Heartbeat(ctx(t), catalog.WorkerInfo{Name: name, Queues: []string{"cpu"}, Slots: 4, Busy: 1,
				Tools: []string{"echo"}, Heartbeat: now, Until: now.Add(15 * time.Second)})
			if err != nil {
				t.Fatal(err)
			}
		}
		beat("a")
		beat("b")
		if got := names(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
			t.Fatalf("workers %v, want [a b]", got)
		}
		ws, _ := e.c.Workers(ctx(t))
		if w := ws[0]; w.Slots != 4 || w.Busy != 1 || len(w.Tools) != 1 || w.Queues[0] != "cpu" {
			t.Fatalf("worker a reads %+v", w)
		}
		e.clock.Advance(10 * time.Second)
		beat("b")
		e.clock.Advance(10 * time.Second) // a's time ran out, b's holds
		if got := names(); len(got) != 1 || got[0] != "b" {
			t.Fatalf("workers %v, want [b]", got)
		}
		if err := e.c.Forget(ctx(t), "b"); err != nil {
			t.Fatal(err)
		}
		if got := names(); len(got) != 0 {
			t.Fatalf("workers %v after b stopped", got)
		}
		e.clock.Advance(2 * time.Hour)
		beat("c")
		if n, _ := b.Client.HLen(ctx(t), b.Prefix+"workers").Result(); n != 1 {
			t.Fatalf("%d entries kept, want c's alone", n)
		}
	})
}
