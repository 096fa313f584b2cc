package catalog_test

import (
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
)

// TestGrantRead: a linked URI is readable by the owner whose task linked
// it, until the grant ends, and by no one else.
func TestGrantRead(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		const owner, uri = "palice", "demo://resource/1"
		if err := e.c.GrantRead(ctx(t), owner, []string{uri}, e.clock.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			owner, uri string
			want       bool
		}{{owner, uri, true}, {owner, "demo://resource/2", false}, {"pmallory", uri, false}} {
			if ok, err := e.c.MayRead(ctx(t), c.owner, c.uri); err != nil || ok != c.want {
				t.Errorf("MayRead(%s, %s) = %v %v, want %v", c.owner, c.uri, ok, err, c.want)
			}
		}
		e.clock.Advance(2 * time.Minute)
		if ok, _ := e.c.MayRead(ctx(t), owner, uri); ok {
			t.Error("readable after the grant ended")
		}
	})
}
