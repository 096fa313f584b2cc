package upstream

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpq/mcpq/worker"
)

// Backoff bounds of retrying an upstream that is down, and how often a
// live one's tool list is read again without a list_changed.
const (
	minBackoff   = time.Second
	maxBackoff   = 30 * time.Second
	relistPeriod = time.Minute
)

// Registry is what a Server needs of the worker.
type Registry interface {
	AddTool(ctx context.Context, t worker.Tool) error
	RemoveTool(name string) bool
	AddResource(ctx context.Context, r worker.Resource) error
}

// Server serves one upstream's tools on a worker.
type Server struct {
	spec Spec
	reg  Registry
	log  *slog.Logger
	pool *pool

	mu     sync.Mutex
	served map[string]json.RawMessage // mcpq name → the upstream definition served
	links  map[string]bool            // linked URIs published as resources (links.go)
}

// NewServer returns the server of spec (validated by Load; New checks it
// again) publishing into reg.
func NewServer(spec Spec, reg Registry) (*Server, error) {
	if err := spec.check(); err != nil {
		return nil, err
	}
	log := spec.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("upstream", spec.Name)
	s := &Server{spec: spec, reg: reg, log: log, served: map[string]json.RawMessage{}, links: map[string]bool{}}
	s.pool = newPool(&s.spec, log)
	return s, nil
}

// Run lists the upstream's tools and keeps the worker's catalog in step
// until ctx ends: again on list_changed, when the listing session ends,
// and every relistPeriod. An upstream that cannot be reached has its
// tools withdrawn and is tried again with backoff. On return every
// process is stopped.
func (s *Server) Run(ctx context.Context) {
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), stopGrace*2)
		defer cancel()
		s.pool.close(sctx)
	}()
	backoff := minBackoff
	for {
		ended, err := s.refresh(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Warn("upstream unavailable; its tools are withdrawn until it is back", "err", err, "retry in", backoff)
			s.withdraw(nil)
			if worker.Sleep(ctx, backoff) != nil {
				return
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		backoff = minBackoff
		t := time.NewTimer(relistPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.pool.changed:
		case <-ended:
		case <-t.C:
		}
		t.Stop()
	}
}

// refresh lists the tools on a slot's session and syncs the catalog; it
// returns the session's end signal.
func (s *Server) refresh(ctx context.Context) (<-chan struct{}, error) {
	sl, sess, err := s.pool.take(ctx)
	if sl != nil {
		defer s.pool.release(sl)
	}
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	tools, err := sess.listTools(lctx)
	if err != nil {
		sl.reset()
		return nil, err
	}
	return sess.t.done(), s.sync(ctx, tools)
}

// sync publishes the selected tools whose definition is new or changed and
// withdraws the ones that vanished.
func (s *Server) sync(ctx context.Context, tools []json.RawMessage) error {
	keep := map[string]bool{}
	for _, raw := range tools {
		var up upstreamTool
		if err := json.Unmarshal(raw, &up); err != nil || up.Name == "" {
			s.log.Warn("upstream listed a tool that does not decode; skipped", "tool", clip(raw, 200))
			continue
		}
		if !s.spec.selects(up.Name) {
			continue
		}
		name := s.spec.Prefix + up.Name
		keep[name] = true
		s.mu.Lock()
		same := string(s.served[name]) == string(raw)
		s.mu.Unlock()
		if same {
			continue
		}
		if err := s.reg.AddTool(ctx, s.tool(up)); err != nil {
			return err
		}
		s.mu.Lock()
		s.served[name] = raw
		s.mu.Unlock()
		s.log.Info("upstream tool served", "tool", name)
	}
	s.withdraw(keep)
	return nil
}

// withdraw removes the served tools not in keep (nil: all).
func (s *Server) withdraw(keep map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.served {
		if !keep[name] {
			s.reg.RemoveTool(name)
			delete(s.served, name)
			s.log.Info("upstream tool withdrawn", "tool", name)
		}
	}
}

// Serve lists each spec's tools into w once (so they are there when the
// worker's Run starts: it serves the queues of the tools it has then),
// runs a Server for each until ctx ends, and returns a function that waits
// for them to stop. An invalid spec is an error before anything starts.
func Serve(ctx context.Context, w Registry, specs []Spec) (wait func(), err error) {
	servers := make([]*Server, 0, len(specs))
	for _, sp := range specs {
		s, err := NewServer(sp, w)
		if err != nil {
			return nil, err
		}
		servers = append(servers, s)
	}
	// A first listing before returning, at once for every server: the
	// worker serves the queues of the tools it has when its Run starts.
	var first sync.WaitGroup
	for _, s := range servers {
		first.Go(func() {
			if _, err := s.refresh(ctx); err != nil {
				s.log.Warn("upstream unavailable at start; retrying with backoff", "err", err)
			}
		})
	}
	first.Wait()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() { s.Run(ctx) })
	}
	return wg.Wait, nil
}
