package events

import (
	"context"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
)

// TestHubLetsGoTogether: a channel whose last subscription closed stays
// subscribed until the hub's next flush, which gives up every channel let
// go by then; a subscription started on such a channel meanwhile takes it
// over, confirmed already, and hears what is published on it. Run without
// the flusher, so the flush comes when the test says.
func TestHubLetsGoTogether(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h := newHub(b.Client)
		defer func() {
			if err := h.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}()
		channels := []string{b.Prefix + "ev:a", b.Prefix + "ev:b", b.Prefix + "ev:c"}
		numsub := func(ch string) int64 {
			n, err := b.NumSub(ctx, ch)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		for _, ch := range channels {
			s, err := h.Subscribe(ctx, ch)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
		}
		for _, ch := range channels {
			if n := numsub(ch); n != 1 {
				t.Fatalf("%s: %d subscribers before the flush, want the hub's 1", ch, n)
			}
		}

		// Taken over before the flush: already confirmed, and it hears.
		again, err := h.Start(ctx, channels[0])
		if err != nil {
			t.Fatal(err)
		}
		defer again.Close()
		select {
		case <-again.ready:
		default:
			t.Fatal("a subscription on a channel still subscribed waits for a confirmation")
		}
		h.flush()
		for i, ch := range channels {
			want := int64(0)
			if i == 0 {
				want = 1
			}
			// Redis reads the hub's UNSUBSCRIBE on its connection and this
			// count on another: wait, bounded, for the count to follow.
			for n := numsub(ch); n != want; n = numsub(ch) {
				if ctx.Err() != nil {
					t.Fatalf("%s: %d subscribers after the flush, want %d", ch, n, want)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		if err := b.Client.Publish(ctx, channels[0], "still").Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-again.C:
			if got != "still" {
				t.Errorf("got %q, want %q", got, "still")
			}
		case <-ctx.Done():
			t.Fatal("the taken-over subscription heard nothing")
		}
	})
}
