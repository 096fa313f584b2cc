package taskstate_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// TestHandBack: a job given back leaves the task working and unclaimed
// under a new job number (the old one claims nothing); with a failure the
// task ends failed and its reservation is released; a job that is not the
// task's current one, or whose task is held, parked or over, is a no-op.
func TestHandBack(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		t.Run("back", func(t *testing.T) {
			ref := e.create(t, taskstate.CreateParams{StatusMessage: "Queued"})
			next, err := e.s.HandBack(ctx(t), ref, 0, nil)
			if err != nil || next != 1 {
				t.Fatalf("HandBack = %d, %v; want job 1", next, err)
			}
			if r := e.get(t, ref); r.Status != proto.StatusWorking || r.StatusMessage != "Queued" || r.Attempt != 0 || r.Resumes != 1 {
				t.Fatalf("after a hand-back: %s %q attempt %d resumes %d", r.Status, r.StatusMessage, r.Attempt, r.Resumes)
			}
			if _, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{}); !errors.Is(err, taskstate.ErrStale) {
				t.Fatalf("claim of the job handed back: %v, want ErrStale", err)
			}
			if _, err := e.s.HandBack(ctx(t), ref, 0, nil); !errors.Is(err, taskstate.ErrStale) {
				t.Fatalf("second hand-back of job 0: %v, want ErrStale", err)
			}
			if c, err := e.s.Claim(ctx(t), ref, 1, taskstate.Share{}); err != nil || c.Attempt != 1 {
				t.Fatalf("claim of job 1: %+v %v", c, err)
			}
			if _, err := e.s.HandBack(ctx(t), ref, 1, nil); !errors.Is(err, taskstate.ErrIllegal) {
				t.Fatalf("hand-back of a held task's job: %v, want ErrIllegal", err)
			}
		})
		t.Run("fail", func(t *testing.T) {
			who := t.Name()
			e.credit(t, who, 100)
			ref := e.create(t, taskstate.CreateParams{Principal: who, Reserve: amount(40)})
			unserved := proto.NewError(proto.CodeInvalidParams, "Unknown tool: echo (no live worker serves it)")
			if next, err := e.s.HandBack(ctx(t), ref, 0, unserved); err != nil || next != 0 {
				t.Fatalf("HandBack failing = %d, %v", next, err)
			}
			r := e.get(t, ref)
			if r.Status != proto.StatusFailed || r.Error == nil || *r.Error != *unserved || r.StatusMessage != unserved.Message {
				t.Fatalf("after a failing hand-back: %s %q %+v", r.Status, r.StatusMessage, r.Error)
			}
			if a := e.account(t, who); a.Reserved != 0 || a.Balance != 100 {
				t.Fatalf("account %+v, want the reservation released", a)
			}
			if _, err := e.s.HandBack(ctx(t), ref, 0, nil); !errors.Is(err, taskstate.ErrTerminal) {
				t.Fatalf("hand-back of an ended task: %v, want ErrTerminal", err)
			}
		})
		t.Run("parked", func(t *testing.T) {
			ref, _ := e.parked(t, taskstate.CreateParams{}, "a")
			if _, err := e.s.HandBack(ctx(t), ref, e.get(t, ref).Resumes, nil); !errors.Is(err, taskstate.ErrIllegal) {
				t.Fatalf("hand-back of a parked task: %v, want ErrIllegal", err)
			}
		})
		t.Run("gone", func(t *testing.T) {
			missing := taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: taskstate.NewID()}
			if _, err := e.s.HandBack(ctx(t), missing, 0, nil); !errors.Is(err, taskstate.ErrNotFound) {
				t.Fatalf("hand-back of no task: %v, want ErrNotFound", err)
			}
		})
	})
}

// TestEntry: one catalog entry, with the time its workers serve it until.
func TestEntry(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, fresh(b))
		if d, err := e.s.Catalog().Entry(ctx(t), "alpha"); d != nil || err != nil {
			t.Fatalf("Entry of nothing published = %+v, %v", d, err)
		}
		def := catalog.Entry{Tool: proto.Tool{Name: "alpha"}, Queue: "gpu"}
		if err := e.s.Catalog().Publish(ctx(t), []catalog.Entry{def}); err != nil {
			t.Fatal(err)
		}
		d, err := e.s.Catalog().Entry(ctx(t), "alpha")
		if err != nil || d == nil || d.Queue != "gpu" || d.Served(e.clock.Now()) {
			t.Fatalf("Entry published, not served = %+v, %v", d, err)
		}
		until := e.clock.Now().Add(time.Minute)
		if _, err := e.s.Catalog().Serve(ctx(t), []string{"alpha"}, until); err != nil {
			t.Fatal(err)
		}
		if d, err = e.s.Catalog().Entry(ctx(t), "alpha"); err != nil || !d.Served(e.clock.Now()) || !d.ServedUntil.Equal(until) {
			t.Fatalf("Entry served = %+v, %v; want served until %v", d, err, until)
		}
	})
}
