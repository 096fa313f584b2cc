package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// authWatch closes a client connection that has carried no authenticated
// request within a bound of its start, as soon as it is idle past it (at
// once when it already is): one that sends nothing, or only requests that
// need no credentials (/healthz every two minutes), cannot hold a
// --max-connections slot for longer (issue 25, item 7; docs/security.md).
// A connection's first authenticated request lifts the bound; the
// keep-alive --idle-timeout applies as before.
type authWatch struct {
	bound time.Duration
	mu    sync.Mutex
	conns map[net.Conn]*watchedConn
}

// watchedConn is one connection's state, shared by the server's hooks.
type watchedConn struct {
	conn   net.Conn
	mu     sync.Mutex
	authed bool
	idle   bool // between requests, or before the first
	late   bool // the bound passed while a request was being served
	timer  *time.Timer
}

type watchKey struct{}

// newAuthWatch returns nil (nothing watched) for bound <= 0.
func newAuthWatch(bound time.Duration) *authWatch {
	if bound <= 0 {
		return nil
	}
	return &authWatch{bound: bound, conns: map[net.Conn]*watchedConn{}}
}

// install sets hs's connection hooks; the front end calls authenticated
// for each request that authenticated (frontend.Config.OnAuthenticated).
func (a *authWatch) install(hs *http.Server) func(*http.Request) {
	if a == nil {
		return nil
	}
	hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		w := &watchedConn{conn: c, idle: true}
		a.mu.Lock()
		a.conns[c] = w
		a.mu.Unlock()
		return context.WithValue(ctx, watchKey{}, w)
	}
	hs.ConnState = a.state
	return authenticated
}

// state follows the server's view of each connection.
func (a *authWatch) state(c net.Conn, s http.ConnState) {
	a.mu.Lock()
	w := a.conns[c]
	if s == http.StateClosed || s == http.StateHijacked {
		delete(a.conns, c)
	}
	a.mu.Unlock()
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch s {
	case http.StateNew:
		w.timer = time.AfterFunc(a.bound, w.expire)
	case http.StateActive:
		w.idle = false
	case http.StateIdle:
		w.idle = true
		if w.late && !w.authed {
			_ = w.conn.Close()
		}
	case http.StateClosed, http.StateHijacked:
		if w.timer != nil {
			w.timer.Stop()
		}
	}
}

// expire runs at the bound: an unauthenticated connection is closed now
// if idle, else once its request has been answered.
func (w *watchedConn) expire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.authed {
		return
	}
	w.late = true
	if w.idle {
		_ = w.conn.Close()
	}
}

// authenticated lifts the bound of r's connection.
func authenticated(r *http.Request) {
	w, ok := r.Context().Value(watchKey{}).(*watchedConn)
	if !ok {
		return
	}
	w.mu.Lock()
	w.authed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
}
