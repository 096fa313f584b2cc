package upstream

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// logQueue bounds the upstream log messages of a call waiting to be
// forwarded; past it, newer ones are dropped until the queue drains.
const logQueue = 64

// logRelay forwards the upstream's notifications/message during a call to
// a client waiting on it (worker.Call.Log), in order, off the session's
// read loop.
type logRelay struct {
	c     *worker.Call
	mu    sync.Mutex
	queue []proto.LoggingMessageParams
	kick  chan struct{}
}

func newLogRelay(c *worker.Call) *logRelay { return &logRelay{c: c, kick: make(chan struct{}, 1)} }

// add queues one notifications/message's params (the session's read loop).
func (l *logRelay) add(params json.RawMessage) {
	var m proto.LoggingMessageParams
	if json.Unmarshal(params, &m) != nil || m.Level == "" {
		return
	}
	l.mu.Lock()
	if len(l.queue) < logQueue {
		l.queue = append(l.queue, m)
	}
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// run forwards what add queued until stop closes (or ctx ends). What it
// has taken from the queue is forwarded with ctx, the call's: a stop while
// it forwards the last messages does not drop them.
func (l *logRelay) run(ctx context.Context, stop <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-l.kick:
		}
		l.flush(ctx)
	}
}

// flush forwards every queued message.
func (l *logRelay) flush(ctx context.Context) {
	l.mu.Lock()
	q := l.queue
	l.queue = nil
	l.mu.Unlock()
	for _, m := range q {
		_ = l.c.Log(ctx, m.Level, m.Data) // nobody listening is not an error of the call
	}
}
