package main

import (
	"net"
	"testing"
	"time"
)

// TestLimitConnections: with a limit of 2, a third connection is not
// accepted until one of the two closes.
func TestLimitConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := limitConnections(ln, 2)
	defer lim.Close()
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := lim.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	first, second := <-accepted, <-accepted
	// The third waits in the backlog. This select cannot make the test pass
	// wrongly: an accept here is a failure, and none is the expected case.
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted past the limit of 2")
	case <-time.After(100 * time.Millisecond):
	}
	_ = first.Close()
	_ = first.Close() // a second Close must not free a second slot
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(20 * time.Second):
		t.Fatal("no connection accepted after one closed")
	}
	_ = second.Close()
}

// TestStaticKeysTrimmed: MCPQ_API_KEYS trims spaces around principal and
// key, so "alice : k" is alice's key (finding 7).
func TestStaticKeysTrimmed(t *testing.T) {
	t.Setenv("MCPQ_API_KEYS", " alice : key-1 ,bob:key-2")
	keys, err := (&authFlags{}).staticKeys()
	if err != nil {
		t.Fatal(err)
	}
	if keys["key-1"] != "alice" || keys["key-2"] != "bob" || len(keys) != 2 {
		t.Errorf("keys %q", keys)
	}
}
