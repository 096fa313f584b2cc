package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// handshakeTimeout bounds starting a session (process start and initialize).
const handshakeTimeout = 30 * time.Second

// pool holds a server's sessions: Concurrency slots, each one session
// running one call at a time, started when first needed and started again
// after it ended.
type pool struct {
	spec    *Spec
	log     *slog.Logger
	slots   chan *slot
	changed chan struct{} // any session's tools/list_changed

	mu     sync.Mutex
	all    []*slot
	closed bool
}

// slot is one place in the pool.
type slot struct {
	p    *pool
	sess *session
}

func newPool(spec *Spec, log *slog.Logger) *pool {
	n := spec.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	p := &pool{spec: spec, log: log, slots: make(chan *slot, n), changed: make(chan struct{}, 1)}
	for range n {
		s := &slot{p: p}
		p.all = append(p.all, s)
		p.slots <- s
	}
	return p
}

// acquire waits for a free slot.
func (p *pool) acquire(ctx context.Context) (*slot, error) {
	select {
	case s := <-p.slots:
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// release gives the slot back.
func (p *pool) release(s *slot) { p.slots <- s }

// take waits for a free slot and returns it with its live session; give
// the slot back with release, whatever the error (sl is nil only when no
// slot was had).
func (p *pool) take(ctx context.Context) (sl *slot, sess *session, err error) {
	if sl, err = p.acquire(ctx); err != nil {
		return nil, nil, err
	}
	sess, err = sl.session(ctx)
	return sl, sess, err
}

// errClosed is the error of a pool being shut down.
var errClosed = errors.New("upstream: shutting down")

// session returns the slot's live session, starting one when it has none
// or its last one ended.
func (s *slot) session(ctx context.Context) (*session, error) {
	if s.sess != nil {
		select {
		case <-s.sess.t.done():
			s.p.log.Warn("upstream session ended; starting it again", "err", s.sess.t.cause())
			s.reset()
		default:
			return s.sess, nil
		}
	}
	s.p.mu.Lock()
	closed := s.p.closed
	s.p.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	t, err := s.p.dial()
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	sess, err := open(hctx, t, s.p.spec.ProtocolVersion, s.p.changed)
	if err != nil {
		t.close()
		if c := t.cause(); c != nil {
			err = fmt.Errorf("%w (%v)", err, c)
		}
		return nil, fmt.Errorf("upstream %s: %w", s.p.spec.Name, err)
	}
	s.sess = sess
	return sess, nil
}

// reset ends the slot's session (a hung or broken one); the next call starts another.
func (s *slot) reset() {
	if s.sess != nil {
		go s.sess.t.close()
		s.sess = nil
	}
}

// dial starts a transport: the process of a stdio server, or an HTTP client.
func (p *pool) dial() (transport, error) {
	if p.spec.URL != "" {
		return newHTTPTransport(p.spec, p.log), nil
	}
	proc, err := startProcess(p.spec, p.log)
	if err != nil {
		return nil, err
	}
	return stdioTransport{proc}, nil
}

// close stops every session, waiting for the slots in use until ctx ends.
func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	for range p.all {
		select {
		case s := <-p.slots:
			if s.sess != nil {
				s.sess.t.close()
				s.sess = nil
			}
		case <-ctx.Done():
			return
		}
	}
}
