package legacy_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend/internal/legacy"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
)

// TestStreamEvents: a session stream's log keeps its messages in order
// with increasing ids, at most MaxStreamEvents of them (the oldest go),
// expiring with the session's idle time; a resume takes it over (the held
// call it answers is read back, and the old writer logs nothing more), and
// another owner or stream finds neither.
func TestStreamEvents(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		c := ctx(t)
		owner, sess, stream := taskstate.OwnerTag(principal), taskstate.NewID(), "c."+taskstate.NewID()
		call := &legacy.StreamCall{RequestID: json.RawMessage(`"call-1"`), TaskID: taskstate.NewID(), ProgressToken: json.RawMessage(`7`)}
		prime, err := e.s.AppendStreamEvent(c, owner, sess, stream, "w1", nil, false, call, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{prime}
		n := legacy.MaxStreamEvents + 10
		for i := 1; i < n; i++ {
			id, err := e.s.AppendStreamEvent(c, owner, sess, stream, "w1", []byte(`{"n":`+strconv.Itoa(i)+`}`), i == n-1, nil, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if !legacy.EntryAfter(id, ids[len(ids)-1]) || legacy.EntryAfter(ids[len(ids)-1], id) {
				t.Fatalf("entry %s does not follow %s", id, ids[len(ids)-1])
			}
			ids = append(ids, id)
		}
		got, err := e.s.StreamEvents(c, owner, sess, stream)
		if err != nil || len(got) != legacy.MaxStreamEvents {
			t.Fatalf("StreamEvents: %d events, %v; want the newest %d", len(got), err, legacy.MaxStreamEvents)
		}
		first := n - legacy.MaxStreamEvents
		if got[0].ID != ids[first] || string(got[0].Data) != `{"n":`+strconv.Itoa(first)+`}` || got[0].Final {
			t.Errorf("oldest kept %+v, want entry %s", got[0], ids[first])
		}
		if last := got[len(got)-1]; last.ID != ids[n-1] || !last.Final {
			t.Errorf("newest %+v, want the final entry %s", last, ids[n-1])
		}
		for _, key := range []string{e.s.Keys().SessionEvents(owner, sess, stream), e.s.Keys().SessionStreamCall(owner, sess, stream)} {
			if left := b.Client.PTTL(c, key).Val(); left <= 0 || left > time.Hour {
				t.Errorf("%s expires in %s, want the session's idle time", key, left)
			}
		}
		// A resume takes the stream over: the old writer logs nothing more.
		sc, err := e.s.TakeStream(c, owner, sess, stream, "w2")
		if err != nil || string(sc.RequestID) != `"call-1"` || sc.TaskID != call.TaskID || string(sc.ProgressToken) != `7` {
			t.Fatalf("TakeStream = %+v, %v", sc, err)
		}
		if _, err := e.s.AppendStreamEvent(c, owner, sess, stream, "w1", []byte(`{"late":1}`), false, nil, time.Hour); !errors.Is(err, legacy.ErrTakenOver) {
			t.Errorf("the old writer's append after a resume: %v, want ErrTakenOver", err)
		}
		if _, err := e.s.AppendStreamEvent(c, owner, sess, stream, "w2", []byte(`{"n":"resumed"}`), false, nil, time.Hour); err != nil {
			t.Errorf("the resuming writer's append: %v", err)
		}
		if evs, _ := e.s.StreamEvents(c, owner, sess, stream); string(evs[len(evs)-1].Data) != `{"n":"resumed"}` {
			t.Errorf("newest event %s, want the resuming writer's", evs[len(evs)-1].Data)
		}
		other := taskstate.OwnerTag("mallory")
		if _, err := e.s.TakeStream(c, other, sess, stream, "w3"); !errors.Is(err, legacy.ErrNoStream) {
			t.Errorf("another owner's TakeStream: %v", err)
		}
		if evs, err := e.s.StreamEvents(c, other, sess, stream); err != nil || len(evs) != 0 {
			t.Errorf("another owner's StreamEvents: %d, %v", len(evs), err)
		}
		for _, c := range [][2]string{{"1-0", "0-9"}, {"2-1", "2-0"}, {"10-0", "9-5"}} {
			if !legacy.EntryAfter(c[0], c[1]) || legacy.EntryAfter(c[1], c[0]) {
				t.Errorf("EntryAfter(%s, %s) wrong", c[0], c[1])
			}
		}
		if legacy.EntryAfter("x", "0-0") || legacy.EntryAfter("1-0", "junk") || legacy.EntryAfter("1-0", "1-0") {
			t.Error("EntryAfter accepts what is not a later entry id")
		}
	})
}

// TestSendTaskState: of a session's GET streams, only the one holding its
// messages sends a task's state, each state once across all of them: a
// stream that takes over does not send again what the earlier holder sent,
// a newer version with the same status and message is not a new state, and
// a newer state is sent by whoever holds the session then.
func TestSendTaskState(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		owner, session := taskstate.OwnerTag(principal), taskstate.NewID()
		const hold, idle = time.Minute, time.Hour
		if err := e.s.CreateSession(ctx(t), legacy.Session{ID: session, Owner: owner, Version: "2025-11-25"}, idle); err != nil {
			t.Fatal(err)
		}
		send := func(stream string, version int64, state string) bool {
			t.Helper()
			ok, err := e.s.SendTaskState(ctx(t), owner, session, stream, "T1", version, state, hold, idle)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		working, cancelled := "working\x00Running", "cancelled\x00Cancelled"
		if err := e.s.TakeGetStream(ctx(t), owner, session, "newest", hold); err != nil {
			t.Fatal(err)
		}
		if send("older", 1, working) {
			t.Fatal("a stream that does not hold the session sent")
		}
		if !send("newest", 1, working) || !send("newest", 2, cancelled) {
			t.Fatal("the holder did not send a new state")
		}
		if send("newest", 2, cancelled) || send("newest", 1, working) {
			t.Fatal("the holder sent a state again, or an older one")
		}
		if err := e.s.ReleaseGetStream(ctx(t), owner, session, "newest"); err != nil {
			t.Fatal(err)
		}
		// The older stream takes over and learns late of version 2.
		if send("older", 2, cancelled) {
			t.Fatal("the stream that took over sent what the earlier holder had sent")
		}
		if ok, err := e.s.HoldsGetStream(ctx(t), owner, session, "older", hold); err != nil || !ok {
			t.Fatalf("the stream that asked did not take over: %v, %v", ok, err)
		}
		if send("older", 3, cancelled) {
			t.Fatal("a newer version with the same state was sent")
		}
		if !send("older", 4, "cancelled\x00Cancelled by the operator") {
			t.Fatal("a new state was not sent")
		}
		if err := e.s.DeleteSession(ctx(t), owner, session); err != nil {
			t.Fatal(err)
		}
		if n := b.Client.Exists(ctx(t), e.s.Keys().SessionSentStates(owner, session)).Val(); n != 0 {
			t.Fatal("the sent states outlive their session")
		}
	})
}
