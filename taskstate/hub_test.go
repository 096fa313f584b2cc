package taskstate_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// newHub starts a hub on the backend, closed when the test ends.
func newHub(t *testing.T, b *redistest.Backend) *events.Hub {
	t.Helper()
	h := events.NewHub(b.Client)
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Hub.Close: %v", err)
		}
	})
	return h
}

func subscribe(t *testing.T, h *events.Hub, channel string) *events.Subscription {
	t.Helper()
	s, err := h.Subscribe(ctx(t), channel)
	if err != nil {
		t.Fatalf("Subscribe(%s): %v", channel, err)
	}
	t.Cleanup(s.Close)
	return s
}

// recv returns the next payload on s.
func recv(t *testing.T, s *events.Subscription) string {
	t.Helper()
	select {
	case p := <-s.C:
		return p
	case <-time.After(wait):
		t.Fatalf("no payload within %v", wait)
		return ""
	}
}

func expectRecv(t *testing.T, s *events.Subscription, want string) {
	t.Helper()
	if got := recv(t, s); eventName(got) != want {
		t.Fatalf("received %q, want %q", got, want)
	}
}

// probe is an open subscription on a channel of its own. The hub reads one
// connection in order, so once a marker published on the probe's channel
// arrives, every message published before it has been dispatched: a
// subscription that holds nothing then has really received nothing.
type probe struct {
	e       *env
	sub     *events.Subscription
	channel string
}

func newProbe(t *testing.T, e *env, h *events.Hub) *probe {
	t.Helper()
	// The probe's channel is in the test principal's slot, so on a cluster
	// its marker leaves from the node whose scripts publish the tasks'
	// changes, and arrives after them.
	channel := e.s.Keys().Events(taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: taskstate.NewID()})
	return &probe{e: e, sub: subscribe(t, h, channel), channel: channel}
}

// sync waits until the hub has dispatched everything published so far.
func (p *probe) sync(t *testing.T) {
	t.Helper()
	marker := "sync-" + taskstate.NewID()
	if err := p.e.b.Publish(ctx(t), p.channel, marker); err != nil {
		t.Fatalf("PUBLISH: %v", err)
	}
	expectRecv(t, p.sub, marker)
}

// empty asserts that nothing waits on the subscriptions.
func empty(t *testing.T, subs ...*events.Subscription) {
	t.Helper()
	for i, s := range subs {
		if n := len(s.C); n != 0 {
			t.Fatalf("subscription %d holds %d payloads, first %q", i, n, <-s.C)
		}
	}
}

func TestHubDeliversStateChanges(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		h := newHub(t, b)
		cases := []struct {
			name   string
			change func(t *testing.T, ref taskstate.Ref, attempt int64)
			want   string
		}{
			{"Finish completed", func(t *testing.T, ref taskstate.Ref, a int64) {
				if err := e.s.Finish(ctx(t), ref, a, outcome(proto.StatusCompleted)); err != nil {
					t.Fatal(err)
				}
			}, "completed"},
			{"Finish failed", func(t *testing.T, ref taskstate.Ref, a int64) {
				if err := e.s.Finish(ctx(t), ref, a, outcome(proto.StatusFailed)); err != nil {
					t.Fatal(err)
				}
			}, "failed"},
			{"Progress", func(t *testing.T, ref taskstate.Ref, a int64) {
				if err := e.s.Progress(ctx(t), ref, a, "50%"); err != nil {
					t.Fatal(err)
				}
			}, "working"},
			{"Claim", func(t *testing.T, ref taskstate.Ref, _ int64) { e.claim(t, ref) }, "working"},
			{"RequestCancel while running", func(t *testing.T, ref taskstate.Ref, _ int64) {
				if err := e.s.RequestCancel(ctx(t), ref); err != nil {
					t.Fatal(err)
				}
			}, "working"}, // "Cancelling"
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ref := e.create(t, taskstate.CreateParams{})
				a := e.claim(t, ref)
				sub := subscribe(t, h, e.s.Keys().Events(ref))
				settle(t, b, sub, e.s.Keys().Events(ref))
				tc.change(t, ref, a)
				expectRecv(t, sub, tc.want)
			})
		}
		t.Run("subscribe before create", func(t *testing.T) {
			// The front end picks the id, subscribes, then creates: a
			// cancel of the never-claimed task is seen.
			ref := taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: taskstate.NewID()}
			sub := subscribe(t, h, e.s.Keys().Events(ref))
			e.create(t, taskstate.CreateParams{ID: ref.ID})
			if err := e.s.RequestCancel(ctx(t), ref); err != nil {
				t.Fatal(err)
			}
			expectRecv(t, sub, "cancelled")
		})
	})
}

func TestHubSubscribers(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		h := newHub(t, b)
		p := newProbe(t, e, h)
		ref := e.create(t, taskstate.CreateParams{})
		other := e.create(t, taskstate.CreateParams{})
		channel := e.s.Keys().Events(ref)
		s1 := subscribe(t, h, channel)
		s2 := subscribe(t, h, channel)
		bystander := subscribe(t, h, e.s.Keys().Events(other))

		// Both subscriptions share the hub's one Redis subscription.
		if n := numsub(t, b, channel); n != 1 {
			t.Fatalf("PUBSUB NUMSUB = %d with two subscriptions, want 1", n)
		}
		attempt := e.claim(t, ref)
		expectRecv(t, s1, "working")
		expectRecv(t, s2, "working")
		p.sync(t)
		empty(t, s1, s2, bystander) // each got it once; the other task's channel nothing

		s1.Close()
		s1.Close() // idempotent
		if err := e.s.Progress(ctx(t), ref, attempt, "half"); err != nil {
			t.Fatal(err)
		}
		expectRecv(t, s2, "working")
		p.sync(t)
		empty(t, s1, s2, bystander)

		s2.Close()
		if err := e.s.Finish(ctx(t), ref, attempt, outcome(proto.StatusCompleted)); err != nil {
			t.Fatal(err)
		}
		p.sync(t)
		empty(t, s1, s2, bystander)
		// The last Close gives the Redis subscription up (Redis handles the
		// UNSUBSCRIBE on the hub's connection, so poll with a bound).
		waitFor(t, "the channel to be unsubscribed", func() bool { return numsub(t, b, channel) == 0 })

		// A new subscription on the same channel works after the last one
		// closed.
		s3 := subscribe(t, h, channel)
		if err := b.Publish(ctx(t), channel, "again"); err != nil {
			t.Fatal(err)
		}
		expectRecv(t, s3, "again")
		p.sync(t)
		empty(t, s1, s2, s3, bystander)
	})
}

// TestHubCloseRacesSubscribe: the last Close of a channel racing a new
// Subscribe on it must leave the new subscription receiving (the
// UNSUBSCRIBE may not reach Redis after the new SUBSCRIBE).
func TestHubCloseRacesSubscribe(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		h := newHub(t, b)
		for i := range 200 {
			channel := e.s.Keys().Events(taskstate.Ref{Owner: "race", ID: taskstate.NewID()})
			old, err := h.Subscribe(ctx(t), channel)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var fresh *events.Subscription
			var subErr error
			wg.Add(2)
			go func() { defer wg.Done(); old.Close() }()
			go func() { defer wg.Done(); fresh, subErr = h.Subscribe(ctx(t), channel) }()
			wg.Wait()
			if subErr != nil {
				t.Fatalf("round %d: Subscribe: %v", i, subErr)
			}
			if err := b.Publish(ctx(t), channel, "hello"); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-fresh.C:
				if got != "hello" {
					t.Fatalf("round %d: received %q", i, got)
				}
			case <-time.After(wait):
				t.Fatalf("round %d: the new subscription is deaf after a racing Close", i)
			}
			fresh.Close()
		}
	})
}

// settle reads sub up to a marker published on channel after it. On one
// Redis the marker comes first. On a cluster, changes made before the
// subscription may still arrive (a script's PUBLISH reaches the node the
// hub listens on over the cluster bus, later than the script returns);
// they are read and dropped here.
func settle(t *testing.T, b *redistest.Backend, sub *events.Subscription, channel string) {
	t.Helper()
	marker := "settle-" + taskstate.NewID()
	if err := b.Publish(ctx(t), channel, marker); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case got := <-sub.C:
			if got == marker {
				return
			}
			if !b.Cluster {
				t.Fatalf("received %q before the marker", got)
			}
		case <-time.After(wait):
			t.Fatalf("marker not received within %v", wait)
		}
	}
}

// numsub is how many connections are subscribed to channel.
func numsub(t *testing.T, b *redistest.Backend, channel string) int64 {
	t.Helper()
	n, err := b.NumSub(ctx(t), channel)
	if err != nil {
		t.Fatalf("PUBSUB NUMSUB: %v", err)
	}
	return n
}

// TestHubSlowReader: a reader that does not keep up is told so (events.Resync
// first) and keeps the newest payloads, in order.
func TestHubSlowReader(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		h := newHub(t, b)
		p := newProbe(t, e, h)
		// In the probe's slot, so the probe's marker follows the payloads
		// on a cluster too.
		channel := e.s.Keys().Events(taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: taskstate.NewID()})
		sub := subscribe(t, h, channel)
		const sent = 40
		for i := range sent {
			if err := b.Publish(ctx(t), channel, strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
		p.sync(t)
		n := len(sub.C)
		if n < 2 || n > cap(sub.C) || n >= sent {
			t.Fatalf("slow reader holds %d payloads (buffer %d, sent %d)", n, cap(sub.C), sent)
		}
		expectRecv(t, sub, events.Resync)
		for i := sent - n + 1; i < sent; i++ {
			expectRecv(t, sub, strconv.Itoa(i))
		}
	})
}

func TestHubClose(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		h := events.NewHub(b.Client)
		ref := e.create(t, taskstate.CreateParams{})
		sub, err := h.Subscribe(ctx(t), e.s.Keys().Events(ref))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- h.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
		case <-time.After(wait):
			t.Fatalf("Hub.Close did not return within %v", wait)
		}
		sub.Close() // after the hub: must not block or panic
		// The store still works without the hub.
		e.claim(t, ref)
	})
}

// TestCreateListening: a subscription started (Hub.Start) before Create but
// not yet confirmed. Create reports whether Redis had it when the record
// was written (CreateParams.Listening); when it did, no event of the task
// is missed, and a subscription started after the record is not counted.
// On a Redis Cluster Create does not ask (the record's node need not be the
// subscriber's) and reports false.
func TestCreateListening(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		h := newHub(t, b)
		create := func(t *testing.T, ref taskstate.Ref) bool {
			t.Helper()
			listening := true // Create must write it either way
			e.create(t, taskstate.CreateParams{ID: ref.ID, Listening: &listening})
			return listening
		}

		ref := taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: taskstate.NewID()}
		sub, err := h.Start(ctx(t), e.s.Keys().Events(ref))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sub.Close)
		listening := create(t, ref)
		if err := sub.Confirmed(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if listening == b.Cluster {
			t.Fatalf("a subscription started before the create: listening %v (cluster %v)", listening, b.Cluster)
		}
		e.claim(t, ref)
		expectRecv(t, sub, "working")

		if create(t, taskstate.Ref{Owner: ref.Owner, ID: taskstate.NewID()}) {
			t.Fatal("no subscription: listening")
		}
	})
}
