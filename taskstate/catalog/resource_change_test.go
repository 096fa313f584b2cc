package catalog_test

import (
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// TestAnnounceResourceChange: a change several workers announce reaches
// the resource-updates channel once; another change, or the same change
// of another resource, is announced again.
func TestAnnounceResourceChange(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		sub := b.Client.Subscribe(ctx(t), catalog.Keys{Prefix: b.Prefix}.ResourceUpdates())
		defer sub.Close()
		if _, err := sub.Receive(ctx(t)); err != nil { // the subscription is confirmed
			t.Fatal(err)
		}
		calls := []struct {
			uri, change string
			announced   bool
		}{
			{"test://a", "1", true},
			{"test://a", "1", false}, // a second worker seeing the same change
			{"test://a", "1", false},
			{"test://b", "1", true},
			{"test://a", "2", true},
		}
		for i, c := range calls {
			got, err := e.c.AnnounceResourceChange(ctx(t), c.uri, c.change, time.Minute)
			if err != nil || got != c.announced {
				t.Fatalf("call %d (%s %s): announced %v, %v; want %v", i, c.uri, c.change, got, err, c.announced)
			}
		}
		var got []string
		for range 3 {
			m, err := sub.ReceiveTimeout(ctx(t), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m.(*redis.Message).Payload)
		}
		if want := []string{"test://a", "test://b", "test://a"}; !slices.Equal(got, want) {
			t.Fatalf("announced %v, want %v", got, want)
		}
		if _, err := e.c.AnnounceResourceChange(ctx(t), "test://c", "1", time.Minute); err != nil {
			t.Fatal(err)
		}
		// Nothing else was published before test://c: the next message is it.
		m, err := sub.ReceiveTimeout(ctx(t), 10*time.Second)
		if err != nil || m.(*redis.Message).Payload != "test://c" {
			t.Fatalf("next message %v (%v), want test://c", m, err)
		}
	})
}
