package queue

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/go-redis/v9"
)

// wakingClient is a Redis client for an asynq.Client whose enqueues wake
// the idle workers of the job's queue (dequeue.go): asynq's enqueue
// script goes out in one pipeline with the PUBLISH on the queue's wake
// channel (Keys.Wake), after it. Every other call goes to Redis unchanged.
// A create pipelines its own wake-up (capturedJob.Pipe); this is for the
// enqueues made outside a create (a resume after input, a takeover, a
// stranded task's recovery).
type wakingClient struct {
	redis.UniversalClient
	keys Keys
}

// newWakingClient wraps rdb for the queues of keys' prefix.
func newWakingClient(rdb redis.UniversalClient, keys Keys) *wakingClient {
	return &wakingClient{UniversalClient: rdb, keys: keys}
}

// EvalSha runs the call; asynq's enqueue script as fair_enqueue.lua
// (fair.go), with a wake-up.
func (c *wakingClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	ch, ok := c.wakes(sha, keys)
	if !ok {
		return c.UniversalClient.EvalSha(ctx, sha, keys, args...)
	}
	fair, args := fairEnqueue.Hash(), frontArg(ctx, args)
	return c.withWake(ctx, ch, func(p redis.Cmdable) *redis.Cmd { return p.EvalSha(ctx, fair, keys, args...) })
}

// Eval runs the call as EvalSha does (go-redis sends the source after a
// NOSCRIPT).
func (c *wakingClient) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	sum := sha1.Sum([]byte(src))
	ch, ok := c.wakes(hex.EncodeToString(sum[:]), keys)
	if !ok {
		return c.UniversalClient.Eval(ctx, src, keys, args...)
	}
	args = frontArg(ctx, args)
	return c.withWake(ctx, ch, func(p redis.Cmdable) *redis.Cmd { return p.Eval(ctx, fairEnqueueSrc, keys, args...) })
}

// wakes is the wake channel of an enqueue script call's queue.
func (c *wakingClient) wakes(sha string, keys []string) (string, bool) {
	if sha != asynqEnqueueSHA {
		return "", false
	}
	return wakeChannel(c.keys, keys)
}

// withWake sends the call and then the wake-up: in one pipeline, or one
// after the other on a cluster (a PUBLISH has no slot to share).
func (c *wakingClient) withWake(ctx context.Context, ch string, call func(redis.Cmdable) *redis.Cmd) *redis.Cmd {
	if _, cluster := c.UniversalClient.(*redis.ClusterClient); cluster {
		cmd := call(c.UniversalClient)
		if cmd.Err() == nil {
			c.UniversalClient.Publish(ctx, ch, "")
		}
		return cmd
	}
	pipe := c.UniversalClient.Pipeline()
	cmd := call(pipe)
	pipe.Publish(ctx, ch, "") // a lost wake-up costs a poll interval: its answer does not matter
	_, _ = pipe.Exec(ctx)
	return cmd
}
