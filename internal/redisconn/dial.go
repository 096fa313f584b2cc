package redisconn

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// go-redis looks at every pooled connection before each use: a
// non-blocking MSG_PEEK read, one recvfrom system call per command or
// pipeline, so that a connection the server has already closed is dropped
// instead of used. mcpq's connections skip that look: a command sent on
// such a connection fails on its read (EOF or reset), and go-redis sends
// it again on a new connection (MaxRetries, 3 by default); the server
// closed the old one before it read the command, so nothing runs twice
// (TestKilledConnectionRetried). The look never saw what it cannot: a
// peer gone without a FIN (a dropped NAT entry) answers the peek "no data"
// too. It is a system call on every Redis round trip, a few per cent of a
// front end's CPU per create and more of a worker's per job
// (docs/benchmarks.md). TLS connections are left as they are: go-redis
// does not peek through TLS.

// unpeeked is a plain connection without SyscallConn, which go-redis's
// look needs (it skips a connection that has none).
type unpeeked struct{ net.Conn }

// unpeekedDialer dials as go-redis's default dialer does (a TCP or unix
// connection with keep-alives; TLS when tlsConfig is set) and hides a
// plain connection's SyscallConn.
func unpeekedDialer(timeout time.Duration, tlsConfig *tls.Config) func(context.Context, string, string) (net.Conn, error) {
	if timeout == 0 {
		timeout = 5 * time.Second // go-redis's default, which it fills in only for its own dialer
	}
	dial := redis.NewDialer(&redis.Options{DialTimeout: timeout, TLSConfig: tlsConfig})
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil || tlsConfig != nil {
			return c, err
		}
		return unpeeked{c}, nil
	}
}
