package main

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// TestUnauthenticatedConnectionsClosed: with a 300 ms bound, a connection
// that sends nothing and one that only asks /healthz (no credentials) over
// and over are both closed once past it; one whose request authenticated
// is still served long after.
func TestUnauthenticatedConnectionsClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: 20 * time.Second}
	onAuth := newAuthWatch(300 * time.Millisecond).install(hs)
	hs.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			onAuth(r) // as the front end's admit does for valid credentials
		}
		_, _ = w.Write([]byte("ok"))
	})
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	dial := func() (net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	get := func(c net.Conn, br *bufio.Reader, path string) error {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return err
		}
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		res.Body.Close()
		return nil
	}
	closedByServer := func(what string, c net.Conn) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := c.Read(make([]byte, 1))
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: still open 10 s after the bound (%v)", what, err)
		}
	}
	silent, _ := dial()
	probe, pbr := dial()
	authed, abr := dial()
	start := time.Now()
	if err := get(authed, abr, "/mcp"); err != nil {
		t.Fatalf("authenticated request: %v", err)
	}
	served := 0
	for time.Since(start) < 2*time.Second {
		if get(probe, pbr, "/healthz") != nil {
			break
		}
		served++
		time.Sleep(50 * time.Millisecond)
	}
	if served == 0 {
		t.Fatal("the /healthz connection was never served")
	}
	closedByServer("a connection that only asks /healthz", probe)
	t.Logf("the /healthz connection served %d requests and was closed %v after it opened", served, time.Since(start).Round(time.Millisecond))
	closedByServer("a connection that sent nothing", silent)
	if err := get(authed, abr, "/healthz"); err != nil {
		t.Fatalf("the authenticated connection, %v after it opened: %v", time.Since(start).Round(time.Millisecond), err)
	}
}
