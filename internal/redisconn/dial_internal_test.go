package redisconn

import (
	"context"
	"net"
	"syscall"
	"testing"
)

// A plain connection mcpq dials has no SyscallConn, so go-redis does not
// peek at it before each use (dial.go).
func TestDialedConnectionNotPeeked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := unpeekedDialer(0, nil)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(syscall.Conn); ok {
		t.Fatal("the dialed connection offers SyscallConn: go-redis peeks at it before every command")
	}
}
