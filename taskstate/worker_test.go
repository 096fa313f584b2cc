package taskstate_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// ms is the clock's current time as the record stores it.
func (e *env) ms() string { return strconv.FormatInt(e.clock.Now().UnixMilli(), 10) }

// changedFields returns the fields whose values differ between two hashes.
func changedFields(before, after map[string]string) map[string]string {
	d := map[string]string{}
	for k, v := range after {
		if old, ok := before[k]; !ok || old != v {
			d[k] = v
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			d[k] = "<deleted>"
		}
	}
	return d
}

func TestClaimAttempts(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		args := json.RawMessage(`{"n":42}`)
		ref := e.create(t, taskstate.CreateParams{Tool: "count", Arguments: args, StatusMessage: "Queued"})
		w := e.watch(t, ref)
		for want := int64(1); want <= 3; want++ {
			t.Run("attempt "+strconv.FormatInt(want, 10), func(t *testing.T) {
				e.clock.Advance(time.Second)
				before := e.raw(t, ref)
				c, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{})
				if err != nil {
					t.Fatalf("Claim: %v", err)
				}
				if c.Attempt != want || c.Record == nil || c.Record.Tool != "count" || string(c.Record.Arguments) != string(args) {
					t.Fatalf("Claim = %+v, want attempt %d of count %s", c, want, args)
				}
				w.expect(t, "working")
				after := e.raw(t, ref)
				msg := after["statusMessage"]
				// The claim hands out the record as it is after the claim.
				if r := c.Record; r.Ref != ref || r.Attempt != want || r.StatusMessage != msg ||
					r.Status != proto.StatusWorking || !r.Heartbeat.Equal(e.clock.Now()) {
					t.Fatalf("Claim.Record = %+v", r)
				}
				if want == 1 && msg != "Running" || !strings.HasPrefix(msg, "Running") {
					t.Fatalf("statusMessage %q after claim %d", msg, want)
				}
				wantChanged := map[string]string{"attempt": strconv.FormatInt(want, 10), "heartbeat": e.ms(),
					"lastUpdatedAt": e.ms(), "statusMessage": msg, "running": strconv.FormatInt(want, 10)}
				if got := changedFields(before, after); !maps.Equal(got, wantChanged) {
					t.Fatalf("claim changed %v, want %v", got, wantChanged)
				}
				r := e.get(t, ref)
				if r.Status != proto.StatusWorking || r.Attempt != want || !r.Heartbeat.Equal(e.clock.Now()) {
					t.Fatalf("record %+v", r)
				}
			})
		}
	})
}

func TestClaimRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, e *env) taskstate.Ref
		want  error
		// after checks the record; nil means it must be unchanged.
		after func(t *testing.T, e *env, ref taskstate.Ref, w *watcher)
	}{
		{
			name: "cancel requested while running",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref := e.create(t, taskstate.CreateParams{})
				e.claim(t, ref)
				if err := e.s.RequestCancel(ctx(t), ref); err != nil {
					t.Fatalf("RequestCancel: %v", err)
				}
				if r := e.get(t, ref); r.Status != proto.StatusWorking || !r.CancelRequested {
					t.Fatalf("after RequestCancel: %+v", r)
				}
				return ref
			},
			want: taskstate.ErrCancelled,
			after: func(t *testing.T, e *env, ref taskstate.Ref, w *watcher) {
				w.expect(t, "cancelled")
				r := e.get(t, ref)
				if r.Status != proto.StatusCancelled || r.Attempt != 1 || !r.LastUpdatedAt.Equal(e.clock.Now()) {
					t.Fatalf("after Claim: %+v", r)
				}
			},
		},
		{
			name: "completed",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref, _ := e.drive(t, proto.StatusCompleted)
				return ref
			},
			want: taskstate.ErrTerminal,
		},
		{
			name: "parked for input",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref, _ := e.drive(t, proto.StatusInputRequired)
				return ref
			},
			want: taskstate.ErrIllegal,
		},
		{
			name: "cancelled before any claim",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref := e.create(t, taskstate.CreateParams{})
				if err := e.s.RequestCancel(ctx(t), ref); err != nil {
					t.Fatalf("RequestCancel: %v", err)
				}
				return ref
			},
			want: taskstate.ErrTerminal,
		},
		{
			name: "expired",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref := e.create(t, taskstate.CreateParams{TTLMs: ttl(5_000)})
				e.clock.Advance(5 * time.Second)
				return ref
			},
			want: taskstate.ErrExpired,
		},
		{
			name: "expired while running",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref := e.create(t, taskstate.CreateParams{TTLMs: ttl(5_000)})
				e.claim(t, ref)
				e.clock.Advance(6 * time.Second)
				return ref
			},
			want: taskstate.ErrExpired,
		},
		{
			name: "missing",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				return taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: taskstate.NewID()}
			},
			want: taskstate.ErrNotFound,
		},
		{
			name: "other owner",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref := e.create(t, taskstate.CreateParams{})
				return taskstate.Ref{Owner: taskstate.OwnerTag("mallory"), ID: ref.ID}
			},
			want: taskstate.ErrNotFound,
		},
	}
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ref := tc.setup(t, e)
				claim := func() error {
					c, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{})
					if c != nil {
						t.Errorf("Claim returned %+v with %v", c, err)
					}
					return err
				}
				if tc.after == nil {
					e.unchanged(t, ref, claim, tc.want)
					return
				}
				w := e.watch(t, ref)
				e.clock.Advance(time.Second)
				if err := claim(); !errors.Is(err, tc.want) {
					t.Fatalf("Claim = %v, want %v", err, tc.want)
				}
				tc.after(t, e, ref, w)
			})
		}
	})
}

// TestFencing: once a newer attempt claimed the task, the older one's
// writes are refused with ErrStale and write nothing.
func TestFencing(t *testing.T) {
	t.Parallel()
	type write struct {
		name string
		do   func(e *env, t *testing.T, ref taskstate.Ref, attempt int64) error
	}
	writes := []write{
		{"Progress", func(e *env, t *testing.T, ref taskstate.Ref, a int64) error {
			return e.s.Progress(ctx(t), ref, a, "half way")
		}},
		{"Heartbeat", func(e *env, t *testing.T, ref taskstate.Ref, a int64) error {
			return e.s.Heartbeat(ctx(t), ref, a)
		}},
	}
	writes = append(writes,
		write{"RequestInput", func(e *env, t *testing.T, ref taskstate.Ref, a int64) error {
			return e.s.RequestInput(ctx(t), ref, a, inputRequest("k"+strconv.FormatInt(a, 10)))
		}},
		write{"SaveCheckpoint", func(e *env, t *testing.T, ref taskstate.Ref, a int64) error {
			return e.s.SaveCheckpoint(ctx(t), ref, a, json.RawMessage(`{"step":1}`))
		}})
	for _, s := range terminalStatuses {
		writes = append(writes, write{"Finish " + string(s), func(e *env, t *testing.T, ref taskstate.Ref, a int64) error {
			return e.s.Finish(ctx(t), ref, a, outcome(s))
		}})
	}
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		for _, wr := range writes {
			t.Run(wr.name, func(t *testing.T) {
				ref := e.create(t, taskstate.CreateParams{})
				old := e.claim(t, ref)
				cur := e.claim(t, ref)
				if cur != old+1 {
					t.Fatalf("attempts %d then %d", old, cur)
				}
				for _, stale := range []int64{old, 0, cur + 1, -1} {
					t.Run("attempt "+strconv.FormatInt(stale, 10), func(t *testing.T) {
						e.unchanged(t, ref, func() error { return wr.do(e, t, ref, stale) }, taskstate.ErrStale)
					})
				}
				// The current attempt still may write.
				if err := wr.do(e, t, ref, cur); err != nil {
					t.Fatalf("%s with the current attempt: %v", wr.name, err)
				}
			})
		}
	})
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		ref := e.create(t, taskstate.CreateParams{TTLMs: ttl(60_000)})
		attempt := e.claim(t, ref)
		w := e.watch(t, ref)

		// beat runs a heartbeat that must write exactly the heartbeat field.
		beat := func(t *testing.T, want error) {
			t.Helper()
			e.clock.Advance(3 * time.Second)
			before := e.raw(t, ref)
			if err := e.s.Heartbeat(ctx(t), ref, attempt); !errors.Is(err, want) {
				t.Fatalf("Heartbeat = %v, want %v", err, want)
			}
			if got := changedFields(before, e.raw(t, ref)); !maps.Equal(got, map[string]string{"heartbeat": e.ms()}) {
				t.Fatalf("Heartbeat changed %v, want only heartbeat=%s", got, e.ms())
			}
			if !e.get(t, ref).Heartbeat.Equal(e.clock.Now()) {
				t.Fatal("Record.Heartbeat is not the clock")
			}
			w.quiet(t) // a heartbeat is no state change
		}

		t.Run("go on", func(t *testing.T) { beat(t, nil) })
		t.Run("again", func(t *testing.T) { beat(t, nil) })
		if err := e.s.RequestCancel(ctx(t), ref); err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		w.expect(t, "working") // the cancel request: still working, "Cancelling"
		t.Run("cancel requested", func(t *testing.T) { beat(t, taskstate.ErrCancelled) })
		t.Run("still cancel requested", func(t *testing.T) { beat(t, taskstate.ErrCancelled) })
		t.Run("missing", func(t *testing.T) {
			missing := taskstate.Ref{Owner: ref.Owner, ID: taskstate.NewID()}
			if err := e.s.Heartbeat(ctx(t), missing, 1); err != taskstate.ErrNotFound {
				t.Fatalf("Heartbeat = %v, want ErrNotFound", err)
			}
			if e.exists(t, missing) {
				t.Fatal("Heartbeat created a record")
			}
		})
		t.Run("expired", func(t *testing.T) {
			e.clock.Advance(time.Minute)
			e.unchanged(t, ref, func() error { return e.s.Heartbeat(ctx(t), ref, attempt) }, taskstate.ErrExpired)
		})
	})
}

func TestProgress(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		ref := e.create(t, taskstate.CreateParams{TTLMs: ttl(60_000)})
		attempt := e.claim(t, ref)
		w := e.watch(t, ref)
		for _, msg := range []string{"10%", "Rendering frame 2 of 3", "", "ünïcødé ✓"} {
			t.Run(strconv.Quote(msg), func(t *testing.T) {
				e.clock.Advance(2 * time.Second)
				before := e.raw(t, ref)
				if err := e.s.Progress(ctx(t), ref, attempt, msg); err != nil {
					t.Fatalf("Progress: %v", err)
				}
				w.expect(t, "working")
				want := map[string]string{"statusMessage": msg, "lastUpdatedAt": e.ms(), "heartbeat": e.ms()}
				if before["statusMessage"] == msg {
					delete(want, "statusMessage")
				}
				if got := changedFields(before, e.raw(t, ref)); !maps.Equal(got, want) {
					t.Fatalf("Progress changed %v, want %v", got, want)
				}
				if r := e.get(t, ref); r.StatusMessage != msg || r.Status != proto.StatusWorking {
					t.Fatalf("record %q %q", r.Status, r.StatusMessage)
				}
			})
		}
		t.Run("missing", func(t *testing.T) {
			missing := taskstate.Ref{Owner: ref.Owner, ID: taskstate.NewID()}
			if err := e.s.Progress(ctx(t), missing, 1, "x"); err != taskstate.ErrNotFound {
				t.Fatalf("Progress = %v, want ErrNotFound", err)
			}
			if e.exists(t, missing) {
				t.Fatal("Progress created a record")
			}
		})
		t.Run("expired", func(t *testing.T) {
			e.clock.Advance(time.Minute)
			e.unchanged(t, ref, func() error { return e.s.Progress(ctx(t), ref, attempt, "late") }, taskstate.ErrExpired)
		})
	})
}

func TestFinishWithoutError(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		ref := e.create(t, taskstate.CreateParams{})
		attempt := e.claim(t, ref)
		w := e.watch(t, ref)
		before := e.raw(t, ref)
		err := e.s.Finish(ctx(t), ref, attempt, taskstate.Outcome{Status: proto.StatusFailed})
		if err == nil {
			t.Fatal("Finish(failed) without an error succeeded")
		}
		if after := e.raw(t, ref); !maps.Equal(before, after) {
			t.Fatalf("record changed: %v", changedFields(before, after))
		}
		w.quiet(t)
	})
}

func TestRequestCancel(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, e *env) taskstate.Ref
		want  error
		// check runs after the call; nil means nothing may change.
		check func(t *testing.T, e *env, ref taskstate.Ref, before map[string]string, w *watcher)
	}{
		{
			name:  "never claimed ends at once",
			setup: func(t *testing.T, e *env) taskstate.Ref { return e.create(t, taskstate.CreateParams{}) },
			check: func(t *testing.T, e *env, ref taskstate.Ref, before map[string]string, w *watcher) {
				w.expect(t, "cancelled")
				// An ended task drops what only a run needs (its arguments).
				want := map[string]string{"status": "cancelled", "statusMessage": "Cancelled", "cancel": "1", "lastUpdatedAt": e.ms(),
					"arguments": "<deleted>"}
				if got := changedFields(before, e.raw(t, ref)); !maps.Equal(got, want) {
					t.Fatalf("changed %v, want %v", got, want)
				}
				if r := e.get(t, ref); r.Status != proto.StatusCancelled || r.Attempt != 0 {
					t.Fatalf("record %+v", r)
				}
			},
		},
		{
			name: "claimed sets the flag",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref := e.create(t, taskstate.CreateParams{})
				e.claim(t, ref)
				return ref
			},
			check: func(t *testing.T, e *env, ref taskstate.Ref, before map[string]string, w *watcher) {
				w.expect(t, "working") // the cancel request: still working, "Cancelling"
				after := e.raw(t, ref)
				got := changedFields(before, after)
				if got["cancel"] != "1" || got["lastUpdatedAt"] != e.ms() || got["status"] != "" || got["attempt"] != "" {
					t.Fatalf("changed %v", got)
				}
				r := e.get(t, ref)
				if r.Status != proto.StatusWorking || !r.CancelRequested || r.Attempt != 1 {
					t.Fatalf("record %+v", r)
				}
				// A second request is accepted again and signals the worker
				// again (stops channel), but changes no state: listeners hear
				// nothing and nothing is rewritten.
				e.clock.Advance(time.Second)
				if err := e.s.RequestCancel(ctx(t), ref); err != nil {
					t.Fatalf("second RequestCancel: %v", err)
				}
				w.quiet(t)
				if again := e.raw(t, ref); !maps.Equal(after, again) {
					t.Fatalf("second request changed %v", changedFields(after, again))
				}
			},
		},
		{
			name: "claimed after progress keeps running until the worker stops",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref := e.create(t, taskstate.CreateParams{})
				a := e.claim(t, ref)
				if err := e.s.Progress(ctx(t), ref, a, "step 1"); err != nil {
					t.Fatal(err)
				}
				return ref
			},
			check: func(t *testing.T, e *env, ref taskstate.Ref, before map[string]string, w *watcher) {
				w.expect(t, "working") // the cancel request: still working, "Cancelling"
				if err := e.s.Finish(ctx(t), ref, 1, outcome(proto.StatusCancelled)); err != nil {
					t.Fatalf("worker Finish(cancelled): %v", err)
				}
				w.expect(t, "cancelled")
				if r := e.get(t, ref); r.Status != proto.StatusCancelled {
					t.Fatalf("status %q", r.Status)
				}
			},
		},
		{
			name: "waiting for input ends at once",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref, _ := e.drive(t, proto.StatusInputRequired)
				return ref
			},
			check: func(t *testing.T, e *env, ref taskstate.Ref, before map[string]string, w *watcher) {
				w.expect(t, "cancelled")
				// An ended task drops what only a run needs (its arguments,
				// the parked delivery's running and heartbeat).
				want := map[string]string{"status": "cancelled", "statusMessage": "Cancelled", "cancel": "1", "lastUpdatedAt": e.ms(),
					"arguments": "<deleted>", "running": "<deleted>", "heartbeat": "<deleted>"}
				if got := changedFields(before, e.raw(t, ref)); !maps.Equal(got, want) {
					t.Fatalf("changed %v, want %v", got, want)
				}
			},
		},
		{
			name: "completed is a no-op",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref, _ := e.drive(t, proto.StatusCompleted)
				return ref
			},
		},
		{
			name: "failed is a no-op",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref, _ := e.drive(t, proto.StatusFailed)
				return ref
			},
		},
		{
			name: "cancelled is a no-op",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref, _ := e.drive(t, proto.StatusCancelled)
				return ref
			},
		},
		{
			name: "unknown",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				return taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: taskstate.NewID()}
			},
			want: taskstate.ErrNotFound,
		},
		{
			name: "other owner",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref := e.create(t, taskstate.CreateParams{})
				return taskstate.Ref{Owner: taskstate.OwnerTag("mallory"), ID: ref.ID}
			},
			want: taskstate.ErrNotFound,
		},
		{
			name: "expired",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref := e.create(t, taskstate.CreateParams{TTLMs: ttl(1_000)})
				e.clock.Advance(time.Second)
				return ref
			},
			want: taskstate.ErrNotFound,
		},
		{
			name: "expired while running",
			setup: func(t *testing.T, e *env) taskstate.Ref {
				ref := e.create(t, taskstate.CreateParams{TTLMs: ttl(1_000)})
				e.claim(t, ref)
				e.clock.Advance(2 * time.Second)
				return ref
			},
			want: taskstate.ErrNotFound,
		},
	}
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ref := tc.setup(t, e)
				cancel := func() error { return e.s.RequestCancel(ctx(t), ref) }
				if tc.check == nil {
					e.unchanged(t, ref, cancel, tc.want)
					if tc.want == taskstate.ErrNotFound {
						if _, err := e.s.Get(ctx(t), ref); err != taskstate.ErrNotFound {
							t.Fatalf("Get = %v, want ErrNotFound", err)
						}
					}
					return
				}
				w := e.watch(t, ref)
				e.clock.Advance(time.Second)
				before := e.raw(t, ref)
				if err := cancel(); !errors.Is(err, tc.want) {
					t.Fatalf("RequestCancel = %v, want %v", err, tc.want)
				}
				tc.check(t, e, ref, before, w)
			})
		}
	})
}

// TestClaimRecordIsWhatARunReads: without an input round the claim hands
// back only what a run reads (Claim.Record), and each of those fields as
// the stored record has it: the call, the principal, the creating
// client's capabilities, the checkpoint an earlier attempt saved, the
// times, the TTL and the job sequence.
func TestClaimRecordIsWhatARunReads(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		ttl := int64(time.Hour / time.Millisecond)
		ref := e.create(t, taskstate.CreateParams{Tool: "render", Arguments: json.RawMessage(`{"frames":40}`),
			TTLMs: &ttl, Capabilities: json.RawMessage(`{"elicitation":{}}`)})
		attempt := e.claim(t, ref)
		if err := e.s.SaveCheckpoint(ctx(t), ref, attempt, json.RawMessage(`{"frame":7}`)); err != nil {
			t.Fatal(err)
		}
		if err := e.s.Release(ctx(t), ref, attempt); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		c, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{})
		if err != nil {
			t.Fatal(err)
		}
		got, want := c.Record, e.get(t, ref)
		if got.Ref != ref || got.Tool != want.Tool || string(got.Arguments) != string(want.Arguments) ||
			got.Principal != principal || string(got.Capabilities) != `{"elicitation":{}}` ||
			string(got.Checkpoint) != `{"frame":7}` || !got.CreatedAt.Equal(want.CreatedAt) ||
			got.TTLMs == nil || *got.TTLMs != ttl || !got.Deadline().Equal(want.Deadline()) ||
			got.Resumes != want.Resumes || got.Attempt != 2 || got.Running != 2 || got.Version != want.Version ||
			got.Status != proto.StatusWorking || got.StatusMessage != want.StatusMessage ||
			!got.StartedAt.Equal(want.StartedAt) || !got.Heartbeat.Equal(e.clock.Now()) {
			t.Fatalf("claimed %+v\nstored  %+v", got, want)
		}
	})
}

// besideJob is a Job that reads the task's status in the pipeline it is
// given: what it sees is what the round trip left before it.
type besideJob struct {
	key    string
	status *redis.StringCmd
	piped  int
	result int
}

func (j *besideJob) Pipe(ctx context.Context, pipe redis.Pipeliner) {
	j.piped++
	j.status = pipe.HGet(ctx, j.key, "status")
}

func (j *besideJob) Result(context.Context, redis.UniversalClient) error {
	j.result++
	return j.status.Err()
}

func (j *besideJob) Send(context.Context, redis.UniversalClient) error {
	return errors.New("besideJob: Send is not Finish's")
}

// An outcome's Beside (internal/queue sends asynq's done so) goes after the
// outcome in its one round trip, and its Result is read once; not on a
// Redis Cluster, where the two may live on different nodes.
func TestFinishBeside(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		hook := &redistest.RoundTrips{}
		b.Client.AddHook(hook)
		var job *besideJob
		var single, pipelines int64
		// The first round loads finish's script and warms the connection
		// pool; the second is the one counted.
		for range 2 {
			ref := e.create(t, taskstate.CreateParams{})
			attempt := e.claim(t, ref)
			job = &besideJob{key: taskstate.Keys{Prefix: b.Prefix}.Task(ref)}
			s0, p0 := hook.Single.Load(), hook.Pipelines.Load()
			err := e.s.Finish(ctx(t), ref, attempt, taskstate.Outcome{Status: proto.StatusCompleted,
				Result: json.RawMessage(`{"content":[]}`), StatusMessage: "Done", Beside: job})
			single, pipelines = hook.Single.Load()-s0, hook.Pipelines.Load()-p0
			if err != nil {
				t.Fatalf("Finish: %v", err)
			}
			if got := e.get(t, ref).Status; got != proto.StatusCompleted {
				t.Fatalf("status %q, want completed", got)
			}
		}
		if b.Cluster {
			if job.piped != 0 || job.result != 0 {
				t.Fatalf("cluster: Beside piped %d, read %d times", job.piped, job.result)
			}
			return
		}
		if job.piped != 1 || job.result != 1 {
			t.Fatalf("Beside piped %d, read %d times; want once each", job.piped, job.result)
		}
		if got := job.status.Val(); got != string(proto.StatusCompleted) {
			t.Fatalf("Beside saw status %q in its round trip, want completed (after the outcome)", got)
		}
		if single != 0 || pipelines != 1 {
			t.Fatalf("Finish sent %d commands and %d pipelines, want one pipeline", single, pipelines)
		}
	})
}
