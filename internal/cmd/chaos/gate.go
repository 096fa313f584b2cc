package main

import (
	"io"
	"net"
	"sync"
	"time"
)

// gate is a TCP pass-through in front of Redis for the front ends and
// workers (the driver's monitor and admin connections go to Redis itself).
// It exists for one moment: when a restarted Redis starts answering, its
// clients reconnect within milliseconds, before the driver's MONITOR can
// attach, and the scripts they run then would go unobserved. So while
// Redis is down the gate refuses connections at once (as a stopped Redis
// would), and from Redis answering until the monitor is attached it holds
// new connections back (a few milliseconds); otherwise it only copies bytes.
type gate struct {
	ln      net.Listener
	backend string

	mu    sync.Mutex
	isUp  bool
	conns map[net.Conn]bool
}

func newGate(backend string) (*gate, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &gate{ln: ln, backend: backend, isUp: true, conns: map[net.Conn]bool{}}
	go g.serve()
	return g, nil
}

// addr is the address clients use.
func (g *gate) addr() string { return g.ln.Addr().String() }

// down refuses new connections and cuts the open ones (Redis is stopping).
func (g *gate) down() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.isUp = false
	for c := range g.conns {
		c.Close()
	}
}

// open lets connections through again.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.isUp = true
}

func (g *gate) close() {
	g.ln.Close()
	g.down()
}

func (g *gate) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		go g.pass(c)
	}
}

func (g *gate) pass(c net.Conn) {
	g.mu.Lock()
	up := g.isUp
	g.mu.Unlock()
	if !up {
		c.Close()
		return
	}
	b, err := net.DialTimeout("tcp", g.backend, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	g.mu.Lock()
	if !g.isUp { // went down while dialling
		g.mu.Unlock()
		c.Close()
		b.Close()
		return
	}
	g.conns[c], g.conns[b] = true, true
	g.mu.Unlock()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) { _, _ = io.Copy(dst, src); done <- struct{}{} }
	go cp(b, c)
	go cp(c, b)
	<-done
	c.Close()
	b.Close()
	<-done
	g.mu.Lock()
	delete(g.conns, c)
	delete(g.conns, b)
	g.mu.Unlock()
}
