package legacy_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend/internal/legacy"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
)

// TestSessions: a legacy session's life in Redis: written, read back with
// its idle expiry renewed, its log level and subscriptions kept, bound to
// its owner, and gone after DELETE (also for a write that races the DELETE).
func TestSessions(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		c := ctx(t)
		owner, other := taskstate.OwnerTag(principal), taskstate.OwnerTag("mallory")
		idle := time.Hour
		sess := legacy.Session{ID: taskstate.NewID(), Owner: owner, Version: "2025-11-25",
			Capabilities: json.RawMessage(`{"elicitation":{}}`), ClientInfo: json.RawMessage(`{"name":"c","version":"1"}`)}
		if err := e.s.CreateSession(c, sess, idle); err != nil {
			t.Fatal(err)
		}
		key := e.s.Keys().Session(owner, sess.ID)
		if err := b.Client.PExpire(c, key, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		got, err := e.s.Session(c, owner, sess.ID, idle)
		if err != nil || got.Version != sess.Version || string(got.Capabilities) != string(sess.Capabilities) ||
			string(got.ClientInfo) != string(sess.ClientInfo) || got.LogLevel != "" {
			t.Fatalf("Session = %+v, %v", got, err)
		}
		if left := b.Client.PTTL(c, key).Val(); left <= time.Minute {
			t.Errorf("a read left the session %s to live, want its idle time renewed", left)
		}
		for _, id := range []string{sess.ID, "not-an-id", taskstate.NewID()} {
			if _, err := e.s.Session(c, other, id, idle); !errors.Is(err, legacy.ErrNoSession) {
				t.Errorf("another owner's Session(%q): %v", id, err)
			}
		}
		if err := e.s.DeleteSession(c, other, sess.ID); !errors.Is(err, legacy.ErrNoSession) {
			t.Errorf("another owner's DeleteSession: %v", err)
		}

		if err := e.s.SetSessionLogLevel(c, owner, sess.ID, "error", idle); err != nil {
			t.Fatal(err)
		}
		for _, uri := range []string{"test://a", "test://b"} {
			if err := e.s.Subscribe(c, owner, sess.ID, uri, true, idle); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.s.Subscribe(c, owner, sess.ID, "test://b", false, idle); err != nil {
			t.Fatal(err)
		}
		if got, _ := e.s.Session(c, owner, sess.ID, idle); got.LogLevel != "error" {
			t.Errorf("log level %q", got.LogLevel)
		}
		for uri, want := range map[string]bool{"test://a": true, "test://b": false} {
			if ok, err := e.s.Subscribed(c, owner, sess.ID, uri); err != nil || ok != want {
				t.Errorf("Subscribed(%s) = %v, %v; want %v", uri, ok, err, want)
			}
		}

		if err := e.s.DeleteSession(c, owner, sess.ID); err != nil {
			t.Fatal(err)
		}
		if n := b.Client.Exists(c, key, e.s.Keys().SessionSubscriptions(owner, sess.ID)).Val(); n != 0 {
			t.Errorf("%d session keys left after DELETE", n)
		}
		if err := e.s.DeleteSession(c, owner, sess.ID); !errors.Is(err, legacy.ErrNoSession) {
			t.Errorf("second DeleteSession: %v", err)
		}
		// A level written after the DELETE does not bring the session back.
		if err := e.s.SetSessionLogLevel(c, owner, sess.ID, "debug", idle); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.Session(c, owner, sess.ID, idle); !errors.Is(err, legacy.ErrNoSession) {
			t.Errorf("Session after DELETE: %v", err)
		}
	})
}

// TestSessionSubscriptionsBounded: a session holds at most
// MaxSessionSubscriptions resources; one already held may be repeated.
func TestSessionSubscriptionsBounded(t *testing.T) {
	e := newEnv(t, redistest.Mini(t))
	c := ctx(t)
	owner, id := taskstate.OwnerTag(principal), taskstate.NewID()
	for i := range legacy.MaxSessionSubscriptions {
		if err := e.s.Subscribe(c, owner, id, "test://r/"+string(rune('a'+i%26))+string(rune('a'+i/26)), true, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.s.Subscribe(c, owner, id, "test://one-more", true, time.Hour); !errors.Is(err, legacy.ErrSubscriptionsLimit) {
		t.Errorf("past the limit: %v", err)
	}
	if err := e.s.Subscribe(c, owner, id, "test://r/aa", true, time.Hour); err != nil {
		t.Errorf("a held one again: %v", err)
	}
}
