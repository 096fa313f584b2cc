package main

import (
	"bufio"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestLimitPerAddress: with 2 connections per address and 8 in all, one
// address holding its 2 idle and opening 20 more gets 429 on each extra
// one at once, and a client from another address is served meanwhile;
// when one of the 2 closes, that address may connect again.
func TestLimitPerAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }),
		ReadHeaderTimeout: 20 * time.Second}
	go func() { _ = hs.Serve(limitPerAddress(limitConnections(ln, 8), 2)) }()
	defer hs.Close()
	addr := ln.Addr().String()
	dialFrom := func(local string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial from %s: %v", local, err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	status := func(c net.Conn) int {
		t.Helper()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return 0 // refused and closed before the write: not served
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0 // reset: a refusal that closed before reading the request
		}
		res.Body.Close()
		return res.StatusCode
	}
	held := []net.Conn{dialFrom("127.0.0.1"), dialFrom("127.0.0.1")}
	if got := status(held[0]); got != http.StatusOK {
		t.Fatalf("first connection: %d", got)
	}
	for range 20 {
		// The refusal comes without a request: read it as it is.
		c := dialFrom("127.0.0.1")
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("a connection over the address's bound: %v", err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
			t.Fatalf("a connection over the address's bound got %d", res.StatusCode)
		}
	}
	if got := status(dialFrom("127.0.0.2")); got != http.StatusOK {
		t.Fatalf("another address while the first is over its bound: %d", got)
	}
	_ = held[1].Close()
	deadline := time.Now().Add(20 * time.Second)
	for status(dialFrom("127.0.0.1")) != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the address never got a connection back after one closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
