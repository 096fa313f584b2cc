package taskstate_test

// Issue 13 (tenant isolation of resources), store side: a listing reads
// only the fields its answer needs.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// TestListTasksSummaryOnly: ListTasks records carry the summary a listing
// shows and none of the arguments or the result, so a page of tasks with
// large results costs the front end the page, not the results (finding 5).
func TestListTasksSummaryOnly(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		big := `{"content":[{"type":"text","text":"` + strings.Repeat("x", 64<<10) + `"}]}`
		ref := e.create(t, taskstate.CreateParams{Arguments: json.RawMessage(`{"secret":"` + strings.Repeat("a", 1024) + `"}`),
			TTLMs: ttl(60_000), PollIntervalMs: 250})
		attempt := e.claim(t, ref)
		if err := e.s.Finish(ctx(t), ref, attempt, taskstate.Outcome{Status: proto.StatusCompleted,
			Result: json.RawMessage(big), StatusMessage: "done"}); err != nil {
			t.Fatal(err)
		}
		res, err := e.s.ListTasks(ctx(t), principal, taskstate.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tasks) != 1 {
			t.Fatalf("listed %d tasks, want 1", len(res.Tasks))
		}
		r := res.Tasks[0]
		if r.Result != nil || r.Arguments != nil || r.Checkpoint != nil {
			t.Errorf("a listing loaded result (%d bytes), arguments (%d bytes), checkpoint (%d bytes)",
				len(r.Result), len(r.Arguments), len(r.Checkpoint))
		}
		want := e.get(t, ref).Task()
		if got := r.Task(); got.Status != want.Status || got.StatusMessage != want.StatusMessage ||
			got.CreatedAt != want.CreatedAt || got.LastUpdatedAt != want.LastUpdatedAt ||
			*got.TTLMs != *want.TTLMs || *got.PollIntervalMs != *want.PollIntervalMs {
			t.Errorf("listed %+v, tasks/get shows %+v", got, want)
		}
	})
}

// TestArgBytesReturned: the argument bytes of the owner's live tasks are
// counted at create and given back however a task ends, and the count
// goes when no task is live (finding 6).
func TestArgBytesReturned(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		args := json.RawMessage(`{"a":"` + strings.Repeat("x", 100) + `"}`)
		total := func() string {
			return b.Client.HGet(ctx(t), e.s.Keys().Live(taskstate.OwnerTag(principal)), "total").Val()
		}
		one := e.create(t, taskstate.CreateParams{Arguments: args, MaxArgBytes: 250})
		two := e.create(t, taskstate.CreateParams{Arguments: args, MaxArgBytes: 250})
		if got := total(); got != "216" {
			t.Fatalf("total %q after two creates of 108 bytes", got)
		}
		if _, err := e.s.Create(ctx(t), taskstate.CreateParams{Principal: principal, Tool: "echo", Arguments: args, MaxArgBytes: 250}); err != taskstate.ErrArgsLimit {
			t.Fatalf("third create: %v, want ErrArgsLimit", err)
		}
		if err := e.s.Finish(ctx(t), one, e.claim(t, one), outcome(proto.StatusCompleted)); err != nil {
			t.Fatal(err)
		}
		if got := total(); got != "108" {
			t.Fatalf("total %q after one ended", got)
		}
		if err := e.s.RequestCancel(ctx(t), two); err != nil {
			t.Fatal(err)
		}
		if n := b.Client.Exists(ctx(t), e.s.Keys().Live(taskstate.OwnerTag(principal))).Val(); n != 0 {
			t.Errorf("the argument bytes hash outlived the last live task (total %q)", total())
		}
	})
}

// TestArgumentsRef: arguments kept in the object store leave only their
// key in the record, still count their real size against the owner's
// argument-byte cap, come back with the claim, and the key goes when the
// task ends.
func TestArgumentsRef(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		args := json.RawMessage(`{"a":"` + strings.Repeat("x", 1000) + `"}`) // 1008 bytes
		total := func() string {
			return b.Client.HGet(ctx(t), e.s.Keys().Live(taskstate.OwnerTag(principal)), "total").Val()
		}
		p := taskstate.CreateParams{Arguments: args, MaxArgBytes: 2500}
		p.ID = taskstate.NewID()
		p.ArgumentsRef = p.ID + "/args"
		ref := e.create(t, p)
		fields := b.Client.HGetAll(ctx(t), e.s.Keys().Task(ref)).Val()
		if _, ok := fields["arguments"]; ok || fields["argsRef"] != ref.ID+"/args" {
			t.Fatalf("record fields %v: want argsRef and no arguments", fields)
		}
		if got := total(); got != "1008" {
			t.Fatalf("total %q after a create of 1008 bytes kept elsewhere", got)
		}
		if rec := e.get(t, ref); rec.ArgumentsRef != ref.ID+"/args" || rec.Arguments != nil {
			t.Fatalf("Get: ref %q, arguments %s", rec.ArgumentsRef, rec.Arguments)
		}
		// The cap counts real sizes: a second one fits, a third does not.
		q := p
		q.ID = taskstate.NewID()
		q.ArgumentsRef = q.ID + "/args"
		e.create(t, q)
		q.ID = taskstate.NewID()
		q.ArgumentsRef = q.ID + "/args"
		q.Principal, q.Tool = principal, "echo"
		if _, err := e.s.Create(ctx(t), q); err != taskstate.ErrArgsLimit {
			t.Fatalf("third create: %v, want ErrArgsLimit", err)
		}
		c, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{})
		if err != nil || c.Record.ArgumentsRef != ref.ID+"/args" {
			t.Fatalf("claim: %v, ref %q", err, c.Record.ArgumentsRef)
		}
		if err := e.s.Finish(ctx(t), ref, c.Attempt, outcome(proto.StatusCompleted)); err != nil {
			t.Fatal(err)
		}
		if got := total(); got != "1008" {
			t.Fatalf("total %q after one ended", got)
		}
		if v := b.Client.HExists(ctx(t), e.s.Keys().Task(ref), "argsRef").Val(); v {
			t.Error("an ended task's record kept its argsRef")
		}
	})
}
