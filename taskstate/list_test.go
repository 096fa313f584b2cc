package taskstate_test

// "My tasks": ListTasks pages through one principal's index, newest first,
// with a status filter, a limit and an opaque cursor, on both backends.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// listAll pages through every task of p with opts (whose Cursor is
// ignored) and returns the ids in order. A page that does not come back
// within the bound fails the test: a listing must never spin.
func (e *env) listAll(t *testing.T, p string, o taskstate.ListOptions) []string {
	t.Helper()
	var ids []string
	o.Cursor = ""
	for page := 0; ; page++ {
		if page > 10_000 {
			t.Fatalf("more than 10000 pages: the cursor does not advance")
		}
		c, cancel := context.WithTimeout(context.Background(), wait)
		res, err := e.s.ListTasks(c, p, o)
		cancel()
		if err != nil {
			t.Fatalf("ListTasks page %d (cursor %q, %d ids so far): %v", page, o.Cursor, len(ids), err)
		}
		if len(res.Tasks) > max(o.Limit, 0) && o.Limit > 0 {
			t.Fatalf("page %d has %d tasks, limit %d", page, len(res.Tasks), o.Limit)
		}
		for _, r := range res.Tasks {
			ids = append(ids, r.Ref.ID)
		}
		if res.Next == "" {
			return ids
		}
		if len(res.Tasks) == 0 {
			t.Fatalf("page %d is empty but has a next cursor", page)
		}
		o.Cursor = res.Next
	}
}

// ids of refs, in order.
func idsOf(refs []taskstate.Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

// fresh is b under a prefix of its own, so subtests sharing one server do
// not see each other's tasks.
func fresh(b *redistest.Backend) *redistest.Backend {
	c := *b
	c.Prefix = b.Prefix + taskstate.NewID()[:8] + ":"
	return &c
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func TestListTasks(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		t.Run("newest first", func(t *testing.T) {
			e := newEnv(t, fresh(b))
			var refs []taskstate.Ref
			for range 5 {
				refs = append(refs, e.create(t, taskstate.CreateParams{}))
				e.clock.Advance(time.Millisecond)
			}
			res, err := e.s.ListTasks(ctx(t), principal, taskstate.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, r := range res.Tasks {
				got = append(got, r.Ref.ID)
				if i > 0 && r.CreatedAt.After(res.Tasks[i-1].CreatedAt) {
					t.Errorf("task %d is newer than task %d", i, i-1)
				}
				if r.Principal != principal || r.Status != proto.StatusWorking {
					t.Errorf("task %d: principal %q status %q", i, r.Principal, r.Status)
				}
			}
			if want := reversed(idsOf(refs)); !slices.Equal(got, want) {
				t.Errorf("order %v, want %v", got, want)
			}
			if res.Next != "" {
				t.Errorf("one page has a next cursor %q", res.Next)
			}
		})

		t.Run("status filter", func(t *testing.T) {
			e := newEnv(t, fresh(b))
			create := func() taskstate.Ref {
				e.clock.Advance(time.Millisecond)
				return e.create(t, taskstate.CreateParams{})
			}
			working := create()
			completed := create()
			failed := create()
			cancelled := create()
			input := create()
			for ref, o := range map[taskstate.Ref]taskstate.Outcome{
				completed: outcome(proto.StatusCompleted), failed: outcome(proto.StatusFailed)} {
				if err := e.s.Finish(ctx(t), ref, e.claim(t, ref), o); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.s.RequestCancel(ctx(t), cancelled); err != nil {
				t.Fatal(err)
			}
			if err := e.s.RequestInput(ctx(t), input, e.claim(t, input),
				raws("q", elicitReq)); err != nil {
				t.Fatal(err)
			}
			want := map[proto.TaskStatus][]string{
				"":                        {input.ID, cancelled.ID, failed.ID, completed.ID, working.ID},
				proto.StatusWorking:       {working.ID},
				proto.StatusInputRequired: {input.ID},
				proto.StatusCompleted:     {completed.ID},
				proto.StatusFailed:        {failed.ID},
				proto.StatusCancelled:     {cancelled.ID},
			}
			for status, ids := range want {
				for _, limit := range []int{0, 1, 2} {
					got := e.listAll(t, principal, taskstate.ListOptions{Status: status, Limit: limit})
					if !slices.Equal(got, ids) {
						t.Errorf("status %q limit %d: %v, want %v", status, limit, got, ids)
					}
				}
			}
		})

		t.Run("limit and cursor", func(t *testing.T) {
			e := newEnv(t, fresh(b))
			var refs []taskstate.Ref
			for range 7 {
				e.clock.Advance(time.Millisecond)
				refs = append(refs, e.create(t, taskstate.CreateParams{}))
			}
			all := reversed(idsOf(refs))
			res, err := e.s.ListTasks(ctx(t), principal, taskstate.ListOptions{Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tasks) != 3 || res.Next == "" {
				t.Fatalf("limit 3: %d tasks, next %q", len(res.Tasks), res.Next)
			}
			for _, limit := range []int{1, 2, 3, 6, 7, 8, 500} {
				if got := e.listAll(t, principal, taskstate.ListOptions{Limit: limit}); !slices.Equal(got, all) {
					t.Errorf("limit %d: %v, want %v", limit, got, all)
				}
			}
			// A cursor is stable: tasks made after it was issued do not shift
			// the pages after it.
			e.clock.Advance(time.Millisecond)
			newer := e.create(t, taskstate.CreateParams{})
			res2, err := e.s.ListTasks(ctx(t), principal, taskstate.ListOptions{Limit: 3, Cursor: res.Next})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range res2.Tasks {
				got = append(got, r.Ref.ID)
			}
			if !slices.Equal(got, all[3:6]) || slices.Contains(got, newer.ID) {
				t.Errorf("page 2 after a new task: %v, want %v", got, all[3:6])
			}
		})

		t.Run("default and largest limit", func(t *testing.T) {
			e := newEnv(t, fresh(b))
			for range 51 {
				e.clock.Advance(time.Millisecond)
				e.create(t, taskstate.CreateParams{})
			}
			res, err := e.s.ListTasks(ctx(t), principal, taskstate.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tasks) != 50 || res.Next == "" {
				t.Errorf("default limit: %d tasks, next %q; want 50 and a cursor", len(res.Tasks), res.Next)
			}
			res, err = e.s.ListTasks(ctx(t), principal, taskstate.ListOptions{Limit: 100_000})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tasks) != 51 || res.Next != "" {
				t.Errorf("limit 100000: %d tasks, next %q; want all 51", len(res.Tasks), res.Next)
			}
		})

		// Tasks created in the same millisecond share a score; the cursor's
		// tie-break on the id must neither repeat nor skip any of them.
		// (Around one Redis batch of the listing; longer runs with other
		// scores around them are TestListTasksManyEqualCreatedAt.)
		for _, n := range []int{5, 17, 64, 65} {
			t.Run(fmt.Sprintf("equal createdAt %d tasks", n), func(t *testing.T) {
				e := newEnv(t, fresh(b))
				var refs []taskstate.Ref
				for range n {
					refs = append(refs, e.create(t, taskstate.CreateParams{}))
				}
				want := idsOf(refs)
				slices.Sort(want)
				for _, limit := range []int{1, 2, 3, n - 1, n, n + 1} {
					if limit < 1 {
						continue
					}
					got := e.listAll(t, principal, taskstate.ListOptions{Limit: limit})
					if len(got) != n {
						t.Errorf("limit %d: %d ids, want %d", limit, len(got), n)
					}
					seen := map[string]bool{}
					for _, id := range got {
						if seen[id] {
							t.Errorf("limit %d: %s listed twice", limit, id)
						}
						seen[id] = true
					}
					sorted := slices.Clone(got)
					slices.Sort(sorted)
					if !slices.Equal(sorted, want) {
						t.Errorf("limit %d: listed %v, want the set %v", limit, got, want)
					}
				}
			})
		}

		t.Run("bad cursor", func(t *testing.T) {
			e := newEnv(t, fresh(b))
			e.create(t, taskstate.CreateParams{})
			enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
			for _, c := range []string{
				"!!!", "=", "not base64 at all", enc("no-colon"), enc("x:" + taskstate.NewID()),
				enc("1.5:" + taskstate.NewID()), enc("12:short"), enc("12:" + taskstate.NewID() + "x"),
				enc(":" + taskstate.NewID()), enc("12:"), base64.StdEncoding.EncodeToString([]byte("12:" + taskstate.NewID() + "?")),
			} {
				if _, err := e.s.ListTasks(ctx(t), principal, taskstate.ListOptions{Cursor: c}); !errors.Is(err, taskstate.ErrBadCursor) {
					t.Errorf("cursor %q: err %v, want ErrBadCursor", c, err)
				}
			}
			// A well-formed cursor past every task is an empty page, not an error.
			res, err := e.s.ListTasks(ctx(t), principal, taskstate.ListOptions{Cursor: enc("0:" + taskstate.NewID())})
			if err != nil || len(res.Tasks) != 0 || res.Next != "" {
				t.Errorf("cursor before every task: %v %+v", err, res)
			}
		})

		t.Run("only the caller's tasks", func(t *testing.T) {
			e := newEnv(t, fresh(b))
			var mine, theirs []string
			for i := range 6 {
				e.clock.Advance(time.Millisecond)
				if i%2 == 0 {
					mine = append(mine, e.create(t, taskstate.CreateParams{}).ID)
				} else {
					theirs = append(theirs, e.create(t, taskstate.CreateParams{Principal: "bob"}).ID)
				}
			}
			if got := e.listAll(t, principal, taskstate.ListOptions{Limit: 2}); !slices.Equal(got, reversed(mine)) {
				t.Errorf("alice lists %v, want %v", got, reversed(mine))
			}
			if got := e.listAll(t, "bob", taskstate.ListOptions{}); !slices.Equal(got, reversed(theirs)) {
				t.Errorf("bob lists %v, want %v", got, reversed(theirs))
			}
			for _, p := range []string{"carol", "", "Alice@example.com", principal + " "} {
				if got := e.listAll(t, p, taskstate.ListOptions{}); len(got) != 0 {
					t.Errorf("principal %q lists %v", p, got)
				}
			}
			// Another principal's cursor is only a position: it shows nothing
			// of the principal it came from.
			res, err := e.s.ListTasks(ctx(t), "bob", taskstate.ListOptions{Limit: 1})
			if err != nil || res.Next == "" {
				t.Fatalf("bob page 1: %v %+v", err, res)
			}
			got, err := e.s.ListTasks(ctx(t), principal, taskstate.ListOptions{Cursor: res.Next})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range got.Tasks {
				if r.Principal != principal || slices.Contains(theirs, r.Ref.ID) {
					t.Errorf("bob's cursor listed %s of %q for alice", r.Ref.ID, r.Principal)
				}
			}
		})

		t.Run("expired records skipped", func(t *testing.T) {
			e := newEnv(t, fresh(b))
			short := e.create(t, taskstate.CreateParams{TTLMs: ttl(1000)})
			e.clock.Advance(time.Millisecond)
			long := e.create(t, taskstate.CreateParams{TTLMs: ttl(3_600_000)})
			e.clock.Advance(time.Millisecond)
			gone := e.create(t, taskstate.CreateParams{})
			if got := e.listAll(t, principal, taskstate.ListOptions{}); !slices.Equal(got, []string{gone.ID, long.ID, short.ID}) {
				t.Fatalf("before expiry: %v", got)
			}
			// A record Redis already dropped (its index entry not yet cleaned).
			if err := e.b.Client.Del(ctx(t), e.s.Keys().Task(gone)).Err(); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(2 * time.Second) // past short's TTL, within Redis' grace
			if !e.exists(t, short) {
				t.Fatalf("the expired record is already gone from Redis; the test needs it present")
			}
			for _, limit := range []int{0, 1} {
				if got := e.listAll(t, principal, taskstate.ListOptions{Limit: limit}); !slices.Equal(got, []string{long.ID}) {
					t.Errorf("limit %d after expiry: %v, want only %s", limit, got, long.ID)
				}
			}
			if n, err := e.s.Reap(ctx(t), nil); err != nil || n != 1 {
				t.Fatalf("Reap: %d %v", n, err)
			}
			n, err := e.b.Client.ZCard(ctx(t), e.s.Keys().Tasks(taskstate.OwnerTag(principal))).Result()
			if err != nil || n != 2 { // long, and gone's stale entry (it had no deadline)
				t.Errorf("index after reap: %d entries (%v), want 2", n, err)
			}
			if got := e.listAll(t, principal, taskstate.ListOptions{}); !slices.Equal(got, []string{long.ID}) {
				t.Errorf("after reap: %v", got)
			}
		})
	})
}

// TestListTasksManyEqualCreatedAt: runs of tasks created in one
// millisecond longer than a Redis batch of the listing (bursts from one
// principal, or calls through several replicas) page to the end with
// nothing repeated or skipped, between tasks of other milliseconds and
// under a status filter. Before 2736cbe the listing re-read the same batch
// forever once a run outgrew it (FuzzHostile found it through the REST API).
func TestListTasksManyEqualCreatedAt(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, fresh(b))
		var all, cancelled []string // newest first within a millisecond: by id, descending
		for _, run := range []int{10, 140, 10} {
			e.clock.Advance(time.Millisecond)
			var ids []string
			for i := range run {
				ref := e.create(t, taskstate.CreateParams{})
				ids = append(ids, ref.ID)
				if i%3 == 0 {
					if err := e.s.RequestCancel(ctx(t), ref); err != nil {
						t.Fatal(err)
					}
				}
			}
			slices.Sort(ids)
			slices.Reverse(ids)
			all = append(ids, all...)
		}
		for _, id := range all {
			rec, err := e.s.Get(ctx(t), taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: id})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status == proto.StatusCancelled {
				cancelled = append(cancelled, id)
			}
		}
		for _, c := range []struct {
			o    taskstate.ListOptions
			want []string
		}{
			{taskstate.ListOptions{Limit: 1}, all},
			{taskstate.ListOptions{Limit: 7}, all},
			{taskstate.ListOptions{Limit: 64}, all},
			{taskstate.ListOptions{}, all},
			{taskstate.ListOptions{Limit: 3, Status: proto.StatusCancelled}, cancelled},
			{taskstate.ListOptions{Limit: 1, Status: proto.StatusCompleted}, nil},
		} {
			if got := e.listAll(t, principal, c.o); !slices.Equal(got, c.want) {
				t.Errorf("%+v: %d ids, want %d in order", c.o, len(got), len(c.want))
			}
		}
	})
}
