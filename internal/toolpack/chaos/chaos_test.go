package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/internal/toolpack/chaos"
	"github.com/mcpq/mcpq/internal/workertest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func start(t *testing.T) *workertest.Env {
	t.Helper()
	return workertest.Start(t, redistest.Mini(t), func(_ context.Context, cfg worker.Config) (*worker.Worker, error) {
		return worker.New(cfg, chaos.Tools()...)
	})
}

func params(tool, args string) taskstate.CreateParams {
	ttl := time.Hour.Milliseconds()
	return taskstate.CreateParams{Principal: "chaos", Tool: tool, Arguments: json.RawMessage(args), TTLMs: &ttl}
}

func text(t *testing.T, rec *taskstate.Record) string {
	t.Helper()
	var r proto.CallToolResult
	if err := json.Unmarshal(rec.Result, &r); err != nil || len(r.Content) != 1 {
		t.Fatalf("result %s: %v", rec.Result, err)
	}
	return r.Content[0].Text
}

// TestTools runs each tool to its end and checks the outcome against what
// the driver expects from the arguments.
func TestTools(t *testing.T) {
	t.Parallel()
	e := start(t)
	cases := []struct {
		tool, args string
		status     proto.TaskStatus
		want       string // result text, or error message
	}{
		{"chaos_steps", `{"steps":3,"stepMs":1,"seed":7}`, proto.StatusCompleted, chaos.StepsResult(3, 7)},
		{"chaos_steps", `{"steps":0}`, proto.StatusCompleted, chaos.StepsResult(0, 0)},
		{"chaos_steps", `{"steps":1001}`, proto.StatusFailed, "Invalid arguments: steps must be from 0 to 1000"},
		{"chaos_steps", `{"steps":1,"stepMs":-1}`, proto.StatusFailed, "Invalid arguments: stepMs must be from 0 to 60000"},
		{"chaos_steps", `{}`, proto.StatusFailed, "Invalid arguments: steps is required"},
		{"chaos_steps", `{"steps":"x"}`, proto.StatusFailed, "Invalid arguments: json: cannot unmarshal"},
		{"chaos_instant", `{"seed":42}`, proto.StatusCompleted, chaos.InstantResult(42)},
		{"chaos_fail", `{"seed":1}`, proto.StatusFailed, chaos.FailMessage},
	}
	for _, c := range cases {
		t.Run(c.tool+c.args, func(t *testing.T) {
			t.Parallel()
			rec := e.Terminal(t, e.Submit(t, params(c.tool, c.args), ""))
			if rec.Status != c.status {
				t.Fatalf("status %s, want %s (%+v)", rec.Status, c.status, rec.Error)
			}
			if c.status == proto.StatusCompleted {
				if got := text(t, rec); got != c.want {
					t.Fatalf("result %q, want %q", got, c.want)
				}
			} else if rec.Error == nil || !strings.HasPrefix(rec.Error.Message, c.want) {
				t.Fatalf("error %+v, want %q", rec.Error, c.want)
			}
		})
	}
}

// TestResume starts a task as if an earlier delivery had done two of four
// steps (attempt 1 claimed it and saved a checkpoint): the next delivery is
// attempt 2, tags its writes with it, resumes at step 2 and still gets the
// right checksum.
func TestResume(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	st := taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix})
	ctx := context.Background()
	p := params("chaos_steps", `{"steps":4,"stepMs":1,"seed":3}`)
	p.ID = taskstate.NewID()
	if _, err := st.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	ref := taskstate.Ref{Owner: taskstate.OwnerTag(p.Principal), ID: p.ID}
	cl, err := st.Claim(ctx, ref, 0, taskstate.Share{})
	if err != nil || cl.Attempt != 1 {
		t.Fatalf("claim: %v %+v", err, cl)
	}
	// The checksum after two steps of seed 3, as the tool folds it.
	sum := int64(0)
	for i := range 2 {
		sum = (sum*31 + 3 + int64(i) + 1) % 1_000_000_007
	}
	cp := fmt.Sprintf(`{"a":1,"done":2,"sum":%d}`, sum)
	if err := st.SaveCheckpoint(ctx, ref, 1, json.RawMessage(cp)); err != nil {
		t.Fatal(err)
	}
	e := workertest.Start(t, b, func(_ context.Context, cfg worker.Config) (*worker.Worker, error) {
		return worker.New(cfg, chaos.Tools()...)
	})
	sub, err := e.Hub.Subscribe(ctx, st.Keys().Events(ref))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	tk := &workertest.Task{Ref: ref, Sub: sub, Tool: p.Tool}
	var tags []string
	e.Enqueue(t, tk, "", 0)
	rec := e.Wait(t, tk, "completed", func(r *taskstate.Record) bool {
		if strings.HasPrefix(r.StatusMessage, "chaos ") && (len(tags) == 0 || tags[len(tags)-1] != r.StatusMessage) {
			tags = append(tags, r.StatusMessage)
		}
		return r.Status.Terminal()
	}, nil)
	if rec.Status != proto.StatusCompleted || text(t, rec) != chaos.StepsResult(4, 3) {
		t.Fatalf("ended %s %s, want %q", rec.Status, rec.Result, chaos.StepsResult(4, 3))
	}
	if rec.Attempt != 2 {
		t.Fatalf("attempt %d, want 2", rec.Attempt)
	}
	for _, tag := range tags {
		a, pid, ok := chaos.ParseTag(tag)
		if !ok || a != 2 || pid != os.Getpid() {
			t.Fatalf("tag %q: attempt %d pid %d ok %v, want attempt 2 pid %d", tag, a, pid, ok, os.Getpid())
		}
		if strings.Contains(tag, " s=0/") || strings.Contains(tag, " s=1/") {
			t.Fatalf("tag %q: steps before the checkpoint ran again", tag)
		}
	}
}

func TestParseTag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in      string
		attempt int64
		pid     int
		ok      bool
	}{
		{chaos.Tag(3, 1, 9, 1234), 3, 1234, true},
		{"chaos a=1 s=0/0 pid=1", 1, 1, true},
		{"Running (attempt 2)", 0, 0, false},
		{"chaos a=x s=0/0 pid=1", 0, 0, false},
		{"chaos a=1 s=0/0 pid=1 extra", 0, 0, false},
	} {
		a, pid, ok := chaos.ParseTag(c.in)
		if a != c.attempt || pid != c.pid || ok != c.ok {
			t.Errorf("ParseTag(%q) = %d, %d, %v; want %d, %d, %v", c.in, a, pid, ok, c.attempt, c.pid, c.ok)
		}
	}
	if a, ok := chaos.CheckpointAttempt(`{"a":2,"done":1,"sum":5}`); !ok || a != 2 {
		t.Errorf("CheckpointAttempt = %d, %v; want 2, true", a, ok)
	}
	if _, ok := chaos.CheckpointAttempt(`{"a":1}`); ok {
		t.Error("CheckpointAttempt accepted a checkpoint without done")
	}
}
