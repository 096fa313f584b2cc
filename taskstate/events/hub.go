package events

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Hub multiplexes pub/sub channel subscriptions of one process over a single
// Redis connection. Subscribe waits for Redis to confirm the subscription, so
// a state change made after Subscribe returns is never missed.
//
// Payloads can still be lost in two ways, and neither is silent: when the
// connection breaks, go-redis reconnects and subscribes every channel again,
// and the hub then delivers Resync on each (whatever was published
// during the outage is gone); and a subscription whose reader falls behind
// by more than its buffer gets Resync in place of what it held. A
// reader treats Resync as "read the record again".
//
// A channel whose last Subscription closed stays subscribed for up to
// unsubscribeDelay, and the channels let go meanwhile leave in one
// UNSUBSCRIBE: a sync call subscribes to its task's channel and lets it
// go within milliseconds, and a command per call is a write here and a
// read and reply in Redis. A Subscription started on such a channel
// meanwhile takes it over, already confirmed.
type Hub struct {
	ps *redis.PubSub
	// cmdMu orders SUBSCRIBE/UNSUBSCRIBE on the wire as the map changes that
	// cause them, so a channel closed and reopened ends up subscribed.
	cmdMu sync.Mutex
	mu    sync.Mutex
	subs  map[string]*hubChannel
	// idle holds the channels that lost their last listener; flush
	// unsubscribes those still without one. kick wakes the flusher; stop
	// ends it.
	idle     map[string]struct{}
	kick     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	wg       sync.WaitGroup
}

type hubChannel struct {
	ready     chan struct{} // closed on Redis's subscribe confirmation
	confirmed bool
	listeners map[*Subscription]struct{}
}

// unsubscribeDelay is how long a channel without listeners may stay
// subscribed before the hub gives it up (with the others let go by then).
const unsubscribeDelay = 5 * time.Millisecond

// Subscription receives the payloads published on one channel, in order. A
// reader that falls a full buffer behind finds Resync followed by the
// newest payload instead of what it missed.
type Subscription struct {
	// C delivers payloads.
	C       <-chan string
	c       chan string
	hub     *Hub
	channel string
	ready   <-chan struct{} // the channel's confirmation (Confirmed)
	once    sync.Once
}

// subscriptionBuffer is how many payloads a Subscription holds unread.
const subscriptionBuffer = 16

// NewHub starts a hub on rdb. Close it to release its connection.
func NewHub(rdb redis.UniversalClient) *Hub {
	h := newHub(rdb)
	h.wg.Go(h.flusher)
	return h
}

// newHub is NewHub without the flusher: idle channels stay subscribed
// until flush.
func newHub(rdb redis.UniversalClient) *Hub {
	h := &Hub{ps: rdb.Subscribe(context.Background()), subs: map[string]*hubChannel{}, idle: map[string]struct{}{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go h.run()
	return h
}

// flusher unsubscribes the idle channels, unsubscribeDelay after the
// first of them went idle, until the hub closes.
func (h *Hub) flusher() {
	for {
		select {
		case <-h.stop:
			return
		case <-h.kick:
		}
		select {
		case <-h.stop:
			return
		case <-time.After(unsubscribeDelay):
		}
		h.flush()
	}
}

// flush sends one UNSUBSCRIBE for the channels still idle.
func (h *Hub) flush() {
	h.cmdMu.Lock()
	defer h.cmdMu.Unlock()
	h.mu.Lock()
	channels := make([]string, 0, len(h.idle))
	for ch := range h.idle {
		if hc, ok := h.subs[ch]; ok && len(hc.listeners) == 0 {
			delete(h.subs, ch)
			channels = append(channels, ch)
		}
	}
	clear(h.idle)
	h.mu.Unlock()
	if len(channels) > 0 {
		_ = h.ps.Unsubscribe(context.Background(), channels...)
	}
}

func (h *Hub) run() {
	defer close(h.done)
	for m := range h.ps.ChannelWithSubscriptions(redis.WithChannelSize(1024)) {
		switch m := m.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			h.mu.Lock()
			if hc, ok := h.subs[m.Channel]; ok {
				if !hc.confirmed {
					hc.confirmed = true
					close(hc.ready)
				} else { // subscribed again after a reconnect
					for s := range hc.listeners {
						s.deliver(Resync)
					}
				}
			}
			h.mu.Unlock()
		case *redis.Message:
			h.mu.Lock()
			if hc, ok := h.subs[m.Channel]; ok {
				for s := range hc.listeners {
					s.deliver(m.Payload)
				}
			}
			h.mu.Unlock()
		}
	}
}

// deliver queues payload; called with the hub's mu held, so only the reader
// competes for s.c.
func (s *Subscription) deliver(payload string) {
	select {
	case s.c <- payload:
		return
	default:
	}
	// Full: what it holds is stale; replace it with a resync, then payload.
	for len(s.c) > 0 {
		select {
		case <-s.c:
		default:
		}
	}
	s.c <- Resync
	if payload != Resync {
		s.c <- payload
	}
}

// Subscribe listens on channel until the Subscription is closed. It returns
// once Redis has confirmed the subscription, or with ctx's error.
func (h *Hub) Subscribe(ctx context.Context, channel string) (*Subscription, error) {
	s, err := h.Start(ctx, channel)
	if err != nil {
		return nil, err
	}
	if err := s.Confirmed(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Start is Subscribe without the wait for Redis's confirmation: it returns
// once the SUBSCRIBE is sent (or the channel was subscribed already).
// Until Confirmed returns, a payload published meanwhile may be missed.
func (h *Hub) Start(ctx context.Context, channel string) (*Subscription, error) {
	c := make(chan string, subscriptionBuffer)
	s := &Subscription{C: c, c: c, hub: h, channel: channel}
	h.cmdMu.Lock()
	h.mu.Lock()
	hc, ok := h.subs[channel]
	if !ok {
		hc = &hubChannel{ready: make(chan struct{}), listeners: map[*Subscription]struct{}{}}
		h.subs[channel] = hc
	}
	hc.listeners[s] = struct{}{} // an idle entry of the channel stays: flush skips it
	s.ready = hc.ready
	h.mu.Unlock()
	var err error
	if !ok {
		err = h.ps.Subscribe(ctx, channel)
	}
	h.cmdMu.Unlock()
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Confirmed waits until Redis has confirmed s's channel (Start), or for
// ctx's error.
func (s *Subscription) Confirmed(ctx context.Context) error {
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the subscription; after the last one on a channel the hub
// unsubscribes it (within unsubscribeDelay).
func (s *Subscription) Close() {
	s.once.Do(func() {
		h := s.hub
		h.mu.Lock()
		hc, ok := h.subs[s.channel]
		last := false
		if ok {
			delete(hc.listeners, s)
			if len(hc.listeners) == 0 {
				h.idle[s.channel] = struct{}{}
				last = true
			}
		}
		h.mu.Unlock()
		if last {
			select {
			case h.kick <- struct{}{}:
			default: // the flusher is due already
			}
		}
	})
}

// Close releases the hub's connection; open subscriptions stop receiving.
func (h *Hub) Close() error {
	h.stopOnce.Do(func() { close(h.stop) })
	h.wg.Wait()
	err := h.ps.Close()
	<-h.done
	return err
}
