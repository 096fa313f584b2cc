package frontend

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/mcpq/mcpq/proto"
)

// errRevoked is the cancel cause of a request whose credentials stopped
// authenticating while it was open (a revoked managed key).
var errRevoked = errors.New("frontend: credentials revoked during the request")

// errRevokedRPC is what such a request answers: the 401 of a request that
// came with a revoked key (as its last event when it was a stream).
func errRevokedRPC() error {
	return withStatus(proto.NewError(proto.CodeInvalidRequest, "Unauthorized: the API key was revoked"), http.StatusUnauthorized)
}

// authWatch re-authenticates a long-lived request (a listen stream, a call
// held while its task runs) every Config.AuthRecheck and cancels its wait
// with errRevoked once its credentials no longer give the same principal.
// Short requests never start one: the cost is one key lookup per
// AuthRecheck per open long-lived request. Since every
// front end checks its own requests against the shared key store, a
// revocation ends long-lived requests on every front end within
// AuthRecheck plus one lookup (issue 13, finding 3; docs/security.md).
type authWatch struct {
	mu     sync.Mutex
	timer  *time.Timer
	done   bool
	cancel context.CancelCauseFunc
}

// watchAuth watches c's credentials for as long as ctx, the context of
// one of its long-lived waits, is open: the returned context ends with
// cause errRevoked once they stop authenticating as c.principal; stop ends
// the watch. With anonymous authentication there is nothing to revoke.
func (s *Server) watchAuth(ctx context.Context, c *call) (context.Context, func()) {
	if _, anon := s.cfg.Auth.(Anonymous); anon || s.cfg.AuthRecheck < 0 {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	w := &authWatch{cancel: cancel}
	check := func() {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.AuthRecheck)
		p, err := s.cfg.Auth.Authenticate(c.httpReq.WithContext(cctx))
		ccancel()
		var unavailable *UnavailableError
		gone := (err != nil && !errors.As(err, &unavailable)) || (err == nil && p != c.principal)
		w.mu.Lock()
		defer w.mu.Unlock()
		switch {
		case w.done:
		case gone:
			w.done = true
			cancel(errRevoked)
		default: // still valid, or the store is away: look again later
			w.timer.Reset(s.cfg.AuthRecheck)
		}
	}
	w.mu.Lock()
	w.timer = time.AfterFunc(s.cfg.AuthRecheck, check)
	w.mu.Unlock()
	return ctx, func() {
		w.mu.Lock()
		w.done = true
		w.timer.Stop()
		w.mu.Unlock()
		cancel(context.Canceled)
	}
}

// endedBy is the error of a wait whose ctx ended: the 401 of a revocation,
// else ctx's own error.
func endedBy(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), errRevoked) {
		return errRevokedRPC()
	}
	return ctx.Err()
}
