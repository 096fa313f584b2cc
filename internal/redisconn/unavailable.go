package redisconn

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// IsUnavailable reports whether err means Redis could not serve the command
// right now, so the same request is worth retrying in a few seconds: the
// connection was refused, reset or closed; a dial, read or write timed out;
// the client's pool had no connection to give in time; or the server said it
// is loading its dataset (LOADING), is a replica after a failover (READONLY),
// has lost its master (MASTERDOWN), its cluster is down or resharding
// (CLUSTERDOWN, TRYAGAIN), or has too many clients. It is the one
// classification of "Redis unavailable"; the front end answers such errors
// with HTTP 503 and Retry-After.
//
// A context cancelled or past its deadline is not unavailability (the caller
// gave up), unless the dial itself failed: go-redis reports a dial timeout
// wrapped in the dial context's deadline.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrNoAnswer) {
		return true // a ConnectBounded client's bound ran out
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true // dial, read or write on the socket failed
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch {
	case errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted), errors.Is(err, redis.ErrClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	case redis.IsLoadingError(err), redis.IsReadOnlyError(err), redis.IsMasterDownError(err),
		redis.IsClusterDownError(err), redis.IsTryAgainError(err), redis.IsMaxClientsError(err):
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	// A Redis error reply the typed checks above do not know in this form
	// (a proxy or an older server may word them so).
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := strings.TrimPrefix(rerr.Error(), "ERR ")
		for _, p := range unavailablePrefixes {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
	}
	return false
}

// IsAtCapacity reports whether err is Redis refusing a write because it
// reached its maxmemory with nothing it may evict (the OOM reply, under
// maxmemory-policy noeviction, also from inside a Lua script). The same
// request may succeed once tasks end and their records expire, so the
// front end answers it as it answers unavailability: HTTP 503 with
// Retry-After, saying the store is at capacity.
func IsAtCapacity(err error) bool {
	var rerr redis.Error
	if err == nil || !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	return strings.HasPrefix(msg, "OOM ") || strings.Contains(msg, "OOM command not allowed")
}

// unavailablePrefixes are the error replies by which Redis says "not now".
var unavailablePrefixes = []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "NOREPLICAS"}
