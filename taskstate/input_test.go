package taskstate_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// raws builds an answers or requests map from key/JSON pairs.
func raws(kv ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

const (
	elicitReq = `{"method":"elicitation/create","params":{"message":"?"}}`
	acceptA   = `{"action":"accept","content":{"name":"A"}}`
	acceptB   = `{"action":"accept","content":{"name":"B"}}`
)

// parked creates, claims and parks a task asking for keys.
func (e *env) parked(t *testing.T, p taskstate.CreateParams, keys ...string) (taskstate.Ref, int64) {
	t.Helper()
	ref := e.create(t, p)
	a := e.claim(t, ref)
	reqs := map[string]json.RawMessage{}
	for _, k := range keys {
		reqs[k] = json.RawMessage(elicitReq)
	}
	if err := e.s.RequestInput(ctx(t), ref, a, reqs); err != nil {
		t.Fatalf("RequestInput: %v", err)
	}
	return ref, a
}

func TestInputRounds(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		t.Run("partial answers keep only the pending key", func(t *testing.T) {
			e := newEnv(t, b)
			ref, _ := e.parked(t, taskstate.CreateParams{PollIntervalMs: 700}, "a", "b")
			res, err := e.s.Answer(ctx(t), ref, raws("a", acceptA))
			if err != nil || res.Applied != 1 || res.Resume != 0 {
				t.Fatalf("first answer: %+v %v", res, err)
			}
			r := e.get(t, ref)
			if r.Status != proto.StatusInputRequired || len(r.InputRequests) != 1 || r.InputRequests["b"] == nil {
				t.Fatalf("after a partial answer: %s %v", r.Status, r.InputRequests)
			}
			// The tool's own interval: a longer one delays the poll after
			// tasks/update, where the next step shows.
			if p := r.Task().PollIntervalMs; p == nil || *p != 700 {
				t.Fatalf("pollIntervalMs %v while waiting for input, want the tool's 700", p)
			}
			res, err = e.s.Answer(ctx(t), ref, raws("b", acceptB))
			if err != nil || res.Applied != 1 || res.Resume != 1 {
				t.Fatalf("last answer: %+v %v", res, err)
			}
			r = e.get(t, ref)
			if r.Status != proto.StatusWorking || string(r.Answers["a"]) != acceptA || string(r.Answers["b"]) != acceptB {
				t.Fatalf("resumed: %s %s", r.Status, r.Answers)
			}
		})
		t.Run("answered, unknown and repeated keys are ignored", func(t *testing.T) {
			e := newEnv(t, b)
			ref, _ := e.parked(t, taskstate.CreateParams{}, "a", "b")
			if _, err := e.s.Answer(ctx(t), ref, raws("a", acceptA)); err != nil {
				t.Fatal(err)
			}
			e.unchanged(t, ref, func() error {
				res, err := e.s.Answer(ctx(t), ref, raws("a", acceptB, "zz", acceptB))
				if err == nil && res != (taskstate.AnswerResult{}) {
					return errors.New("applied something")
				}
				return err
			}, nil)
		})
		t.Run("a key is never issued twice", func(t *testing.T) {
			e := newEnv(t, b)
			ref, _ := e.parked(t, taskstate.CreateParams{}, "a")
			if res, err := e.s.Answer(ctx(t), ref, raws("a", acceptA)); err != nil || res.Resume != 1 {
				t.Fatalf("answer: %+v %v", res, err)
			}
			a := e.claim(t, ref)
			e.unchanged(t, ref, func() error {
				return e.s.RequestInput(ctx(t), ref, a, raws("a", elicitReq))
			}, taskstate.ErrKeyReused)
			if err := e.s.RequestInput(ctx(t), ref, a, raws("c", elicitReq)); err != nil {
				t.Fatalf("a new key in the next round: %v", err)
			}
		})
		t.Run("cancel of a parked task ends it at once", func(t *testing.T) {
			e := newEnv(t, b)
			ref, _ := e.parked(t, taskstate.CreateParams{}, "a")
			if err := e.s.RequestCancel(ctx(t), ref); err != nil {
				t.Fatal(err)
			}
			if r := e.get(t, ref); r.Status != proto.StatusCancelled {
				t.Fatalf("status %s", r.Status)
			}
			e.unchanged(t, ref, func() error {
				_, err := e.s.Answer(ctx(t), ref, raws("a", acceptA))
				return err
			}, taskstate.ErrTerminal)
		})
		t.Run("cancel of a resumed task not yet picked up ends it at once", func(t *testing.T) {
			e := newEnv(t, b)
			ref, _ := e.parked(t, taskstate.CreateParams{}, "a")
			if _, err := e.s.Answer(ctx(t), ref, raws("a", acceptA)); err != nil {
				t.Fatal(err)
			}
			if err := e.s.RequestCancel(ctx(t), ref); err != nil {
				t.Fatal(err)
			}
			if r := e.get(t, ref); r.Status != proto.StatusCancelled {
				t.Fatalf("status %s %q", r.Status, r.StatusMessage)
			}
			if _, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{}); !errors.Is(err, taskstate.ErrTerminal) {
				t.Fatalf("claim of the resumed job: %v", err)
			}
		})
		t.Run("a checkpoint survives the park", func(t *testing.T) {
			e := newEnv(t, b)
			ref := e.create(t, taskstate.CreateParams{})
			a := e.claim(t, ref)
			if err := e.s.SaveCheckpoint(ctx(t), ref, a, json.RawMessage(`{"done":3}`)); err != nil {
				t.Fatal(err)
			}
			if err := e.s.RequestInput(ctx(t), ref, a, raws("a", elicitReq)); err != nil {
				t.Fatal(err)
			}
			if _, err := e.s.Answer(ctx(t), ref, raws("a", acceptA)); err != nil {
				t.Fatal(err)
			}
			c, err := e.s.Claim(ctx(t), ref, 1, taskstate.Share{})
			if err != nil || string(c.Record.Checkpoint) != `{"done":3}` || string(c.Record.Answers["a"]) != acceptA {
				t.Fatalf("claim after resume: %+v %v", c, err)
			}
		})
	})
}

func TestLifetime(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		t.Run("SetTTL moves the deadline and the reaper honours it", func(t *testing.T) {
			e := newEnv(t, b)
			ref := e.create(t, taskstate.CreateParams{TTLMs: ttl(1000)})
			if err := e.s.SetTTL(ctx(t), ref, 0, time.Hour); err != nil {
				t.Fatal(err)
			}
			if r := e.get(t, ref); *r.TTLMs != time.Hour.Milliseconds() {
				t.Fatalf("ttlMs %d", *r.TTLMs)
			}
			e.clock.Advance(2 * time.Second)
			if n, err := e.s.Reap(ctx(t), nil); err != nil || n != 0 {
				t.Fatalf("reap: %d %v", n, err)
			}
			e.get(t, ref)
			if err := e.s.SetTTL(ctx(t), ref, 0, time.Second); !errors.Is(err, taskstate.ErrIllegal) {
				t.Fatalf("a ttl already past: %v", err)
			}
		})
		t.Run("the reaper removes expired tasks once and tells listeners", func(t *testing.T) {
			e := newEnv(t, b)
			short := e.create(t, taskstate.CreateParams{TTLMs: ttl(1000)})
			long := e.create(t, taskstate.CreateParams{TTLMs: ttl(60000)})
			w := e.watch(t, short)
			e.clock.Advance(1500 * time.Millisecond)
			n, err := e.s.Reap(ctx(t), nil)
			if err != nil || n != 1 {
				t.Fatalf("reap: %d %v", n, err)
			}
			w.expect(t, events.Expired)
			if e.exists(t, short) || !e.exists(t, long) {
				t.Fatal("the wrong records are gone")
			}
			if n, err := e.s.Reap(ctx(t), nil); err != nil || n != 0 {
				t.Fatalf("second reap: %d %v", n, err)
			}
		})
		t.Run("a quiet worker shows in statusMessage", func(t *testing.T) {
			e := newEnvOpts(t, b, taskstate.Options{LostAfter: 10 * time.Second})
			ref := e.create(t, taskstate.CreateParams{})
			if r := e.get(t, ref); r.StatusMessage != "Queued" && r.StatusMessage != "" {
				t.Fatalf("queued: %q", r.StatusMessage)
			}
			e.clock.Advance(time.Minute) // queued, no worker yet: not lost
			if r := e.get(t, ref); strings.Contains(r.StatusMessage, "No word") {
				t.Fatalf("a queued task reported lost: %q", r.StatusMessage)
			}
			e.claim(t, ref)
			e.clock.Advance(11 * time.Second)
			if r := e.get(t, ref); !strings.Contains(r.StatusMessage, "No word from its worker") {
				t.Fatalf("lost worker not shown: %q", r.StatusMessage)
			}
		})
	})
}
