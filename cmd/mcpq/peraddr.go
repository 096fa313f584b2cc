package main

import (
	"net"
	"strconv"
	"sync"
	"time"
)

// perAddressListener bounds the open connections of each remote IP
// address: one past the bound is answered 429 and closed at once, so one
// address cannot hold the front end's connection slots (--max-connections)
// with idle connections while other clients wait (issue 25, item 7).
type perAddressListener struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[string]int
}

// limitPerAddress wraps ln; n <= 0 leaves it unbounded.
func limitPerAddress(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		return ln
	}
	return &perAddressListener{Listener: ln, max: n, open: map[string]int{}}
}

// tooManyFromAddress is the body of the answer to a connection over the bound.
const tooManyFromAddress = "too many connections from this address\n"

// Accept returns the next connection within its address's bound; those
// over it are refused here and never reach the HTTP server.
func (l *perAddressListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		l.mu.Lock()
		if l.open[ip] >= l.max {
			l.mu.Unlock()
			go refuse(c)
			continue
		}
		l.open[ip]++
		l.mu.Unlock()
		return &addressConn{Conn: c, free: func() { l.release(ip) }}, nil
	}
}

func (l *perAddressListener) release(ip string) {
	l.mu.Lock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
	l.mu.Unlock()
}

// refuse answers 429 within a second, without reading the request, and
// closes c (which frees its --max-connections slot).
func refuse(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte("HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nRetry-After: 1\r\n" +
		"Content-Type: text/plain\r\nContent-Length: " + strconv.Itoa(len(tooManyFromAddress)) + "\r\n\r\n" + tooManyFromAddress))
	_ = c.Close()
}

// remoteIP is c's remote address without its port.
func remoteIP(c net.Conn) string {
	a := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(a); err == nil {
		return host
	}
	return a
}

// addressConn gives its address's count back once, on the first Close.
type addressConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *addressConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}
