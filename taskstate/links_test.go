package taskstate_test

import (
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
)

// TestGrantRead: a linked URI is readable by the owner whose task linked
// it, until the grant ends, and by no one else.
func TestGrantRead(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		ref := e.create(t, taskstate.CreateParams{})
		const uri = "demo://resource/1"
		if err := e.s.GrantRead(ctx(t), ref, []string{uri}, e.clock.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			owner, uri string
			want       bool
		}{{ref.Owner, uri, true}, {ref.Owner, "demo://resource/2", false}, {taskstate.OwnerTag("mallory"), uri, false}} {
			if ok, err := e.s.MayRead(ctx(t), c.owner, c.uri); err != nil || ok != c.want {
				t.Errorf("MayRead(%s, %s) = %v %v, want %v", c.owner, c.uri, ok, err, c.want)
			}
		}
		e.clock.Advance(2 * time.Minute)
		if ok, _ := e.s.MayRead(ctx(t), ref.Owner, uri); ok {
			t.Error("readable after the grant ended")
		}
	})
}
