package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoAnswer is what a command of a ConnectBounded client fails with
// when Redis did not answer within the bound: a frozen server (SIGSTOP, a
// stalled host) keeps its connections open and says nothing, so only a
// deadline tells. IsUnavailable reports it.
var ErrNoAnswer = errors.New("redis: no answer within the request bound")

// ConnectBounded is Connect for a request path: every command (and
// pipeline) that does not block by design gets at most bound to be
// answered, the retries go-redis makes included, and fails with
// ErrNoAnswer past it. Without it a frozen Redis holds a request for the
// client's read timeout on every retry (3 s × 4 by default, more with
// several commands), where the caller wants a 503 it can retry elsewhere.
// Blocking commands (BLPOP and kin, XREAD BLOCK, WAIT, WAITAOF) keep their
// own timeouts; pub/sub connections are not commands and are not bounded.
func ConnectBounded(rawURL string, bound time.Duration) (redis.UniversalClient, error) {
	if bound <= 0 {
		return nil, fmt.Errorf("redis request bound must be above 0, got %s", bound)
	}
	rdb, err := connect(rawURL, true)
	if err != nil {
		return nil, err
	}
	rdb.AddHook(boundHook{bound: bound})
	return rdb, nil
}

// boundHook puts the deadline on each command's context.
type boundHook struct{ bound time.Duration }

func (boundHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h boundHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if blocks(cmd) {
			return next(ctx, cmd)
		}
		bctx, cancel := context.WithTimeout(ctx, h.bound)
		defer cancel()
		err := h.noAnswer(ctx, bctx, next(bctx, cmd))
		if errors.Is(err, ErrNoAnswer) {
			cmd.SetErr(err)
		}
		return err
	}
}

func (h boundHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if blocks(c) {
				return next(ctx, cmds)
			}
		}
		bctx, cancel := context.WithTimeout(ctx, h.bound)
		defer cancel()
		err := h.noAnswer(ctx, bctx, next(bctx, cmds))
		if errors.Is(err, ErrNoAnswer) {
			for _, c := range cmds {
				if c.Err() != nil {
					c.SetErr(err)
				}
			}
		}
		return err
	}
}

// noAnswer turns err into ErrNoAnswer when the bound ran out and the
// caller's own context did not: the error go-redis returns then is a
// socket timeout or the bound context's DeadlineExceeded, and the latter
// would read as "the caller gave up".
func (h boundHook) noAnswer(ctx, bctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || bctx.Err() == nil {
		return err
	}
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return fmt.Errorf("%w (%s): %v", ErrNoAnswer, h.bound, err)
	}
	return err
}

// blocks reports whether cmd waits by design, so its time is not Redis
// failing to answer.
func blocks(cmd redis.Cmder) bool {
	switch name := strings.ToLower(cmd.Name()); name {
	case "blpop", "brpop", "brpoplpush", "blmove", "blmpop", "bzpopmin", "bzpopmax", "bzmpop", "wait", "waitaof":
		return true
	case "xread", "xreadgroup":
		for _, a := range cmd.Args() {
			if s, ok := a.(string); ok && strings.EqualFold(s, "block") {
				return true
			}
		}
	}
	return false
}
