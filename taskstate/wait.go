package taskstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Durable writes (Options.WaitReplicas). Redis replicates asynchronously:
// a write acknowledged by the primary can be lost if the primary fails
// before a replica copied it. With WaitReplicas set, the writes a client is
// told about (Create, Answer, RequestCancel) are followed by Redis's
// WAIT numreplicas timeout, which blocks until that many replicas have
// acknowledged every earlier write of the same connection. So the WAIT
// goes in one pipeline with the script (a go-redis Pipeline runs on one
// connection), and on a Redis Cluster that pipeline runs on the primary
// owning the record's slot (ClusterClient.MasterForKey). Writes made by
// workers are not waited on: a lost one is redone by the next delivery.

// defaultWaitTimeout is Options.WaitTimeout when WaitReplicas is set and
// WaitTimeout is not.
const defaultWaitTimeout = time.Second

// ErrNotReplicated is matched (errors.Is) by a *ReplicaError.
var ErrNotReplicated = errors.New("taskstate: write not confirmed by enough replicas")

// ReplicaError says a write was made on the primary but fewer replicas
// than Options.WaitReplicas confirmed it within Options.WaitTimeout: it
// holds now, and may be lost if the primary fails over.
type ReplicaError struct {
	// Want is Options.WaitReplicas; Got is how many replicas confirmed.
	Want, Got int64
	// Timeout is how long Redis waited.
	Timeout time.Duration
}

func (e *ReplicaError) Error() string {
	return fmt.Sprintf("taskstate: the write is done but only %d of %d replicas confirmed it within %s", e.Got, e.Want, e.Timeout)
}

// Is makes errors.Is(err, ErrNotReplicated) hold.
func (e *ReplicaError) Is(target error) bool { return target == ErrNotReplicated }

// durableNode is the client whose connection runs the write and its WAIT:
// on a cluster, the primary owning key's slot.
func (s *Store) durableNode(ctx context.Context, key string) (redis.Cmdable, error) {
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, key)
	}
	return s.rdb, nil
}

// addWait queues WAIT on pipe when the store waits for replicas (nil
// otherwise).
func (s *Store) addWait(ctx context.Context, pipe redis.Pipeliner) *redis.IntCmd {
	if s.waitReplicas <= 0 {
		return nil
	}
	// Pipeliner lacks go-redis's Wait method, so the command is built here.
	// Redis reads a timeout of 0 as "forever"; New keeps it at least 1ms.
	cmd := redis.NewIntCmd(ctx, "wait", s.waitReplicas, s.waitTimeout.Milliseconds())
	_ = pipe.Process(ctx, cmd)
	return cmd
}

// waitResult turns a WAIT reply into a *ReplicaError when too few replicas
// confirmed (nil wc: the store does not wait).
func (s *Store) waitResult(wc *redis.IntCmd) error {
	if wc == nil {
		return nil
	}
	n, err := wc.Result()
	if err != nil {
		return fmt.Errorf("taskstate: WAIT for replicas: %w", err)
	}
	if n < int64(s.waitReplicas) {
		return &ReplicaError{Want: int64(s.waitReplicas), Got: n, Timeout: s.waitTimeout}
	}
	return nil
}

// runWaited runs sc as run does (FCALL or EVALSHA, again after a missing
// function or script)
// and, when the store waits for replicas, WAIT right after it on the same
// connection. The script's reply is in the returned Cmd; replicaErr
// reports a WAIT that fell short or failed (read it only when the script
// succeeded: a refused script wrote nothing).
func (s *Store) runWaited(ctx context.Context, sc *script, keys []string, args ...any) (reply *redis.Cmd, replicaErr error) {
	if s.waitReplicas <= 0 {
		return s.run(ctx, sc, keys, args...), nil
	}
	node, err := s.durableNode(ctx, keys[0])
	if err != nil {
		reply = redis.NewCmd(ctx)
		reply.SetErr(err)
		return reply, nil
	}
	pipe := node.Pipeline()
	reply = s.send(ctx, pipe, sc, keys, args...)
	wc := s.addWait(ctx, pipe)
	_, _ = pipe.Exec(ctx)
	if isMissing(reply.Err()) {
		pipe = node.Pipeline()
		reply = s.resend(ctx, pipe, sc, keys, args...)
		wc = s.addWait(ctx, pipe)
		_, _ = pipe.Exec(ctx)
	}
	return reply, s.waitResult(wc)
}

// runKeysWaited is runKeys for a write the caller acknowledges to a client:
// the script's refusal code first, then a replica shortfall. CANCELLED is
// no refusal but a write (cancel.lua ends a task no worker holds), so a
// shortfall wins over it.
func (s *Store) runKeysWaited(ctx context.Context, sc *script, keys []string, args ...any) error {
	reply, replicaErr := s.runWaited(ctx, sc, keys, args...)
	code, err := s.scriptCode(reply)
	if err != nil {
		return err
	}
	if err := codeErr(code); err != nil && (replicaErr == nil || !errors.Is(err, ErrCancelled)) {
		return err
	}
	return replicaErr
}
