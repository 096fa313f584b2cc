package main

import (
	"net"
	"sync"
)

// limitListener accepts at most n connections at a time: Accept waits
// while n are open, so the kernel's backlog holds the rest and the
// process's descriptors are never exhausted by idle clients (issue 13,
// finding 7; docs/security.md states the numbers).
type limitListener struct {
	net.Listener
	slots chan struct{}
}

// limitConnections wraps ln; n <= 0 leaves it unbounded.
func limitConnections(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, n)}
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, free: func() { <-l.slots }}, nil
}

// limitedConn gives its slot back once, on the first Close.
type limitedConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}
