package frontend_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
)

// readCounter counts the task record reads (HGETALL) sent through a client
// and tells when a held call is past its start: its create found its
// subscription (PUBSUB NUMSUB > 0) or it read the record after it.
type readCounter struct {
	mu      sync.Mutex
	reads   int
	started chan struct{}
}

func (h *readCounter) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reads, h.started = 0, make(chan struct{})
}

func (h *readCounter) n() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reads
}

func (h *readCounter) saw(cmd redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	start := false
	switch c := cmd.(type) {
	case *redis.MapStringIntCmd: // PUBSUB NUMSUB
		for _, n := range c.Val() {
			start = start || n > 0
		}
	default:
		if key, _ := cmd.Args()[1].(string); cmd.Name() == "hgetall" && strings.Contains(key, ":task:") {
			h.reads++
			start = true
		}
	}
	if start && h.started != nil {
		select {
		case <-h.started:
		default:
			close(h.started)
		}
	}
}

func (h *readCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *readCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.saw(cmd)
		return err
	}
}

func (h *readCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			h.saw(cmd)
		}
		return err
	}
}

// TestSyncAnswerFromEvent: a call held until its task completes answers
// with the result its completion event carries, without reading the record
// back; a result over taskstate.EventResultMax is read from the record, and
// both answers are the tool's result exactly.
func TestSyncAnswerFromEvent(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		reads := &readCounter{}
		b.Client.AddHook(reads)
		e := newEnv(t, b, nil)
		for _, c := range []struct {
			name  string
			reads int
		}{
			{"Ada", 0},
			{strings.Repeat("a", taskstate.EventResultMax), 1},
		} {
			reads.reset()
			started := reads.started
			res := make(chan reply, 1)
			go func() { res <- e.callTool(metaPlain, toolSlow, nil) }()
			j := e.enq.nextJob(t)
			select { // the create found the subscription, or the record was read after it
			case <-started:
			case <-time.After(waitBound):
				t.Fatal("the call did not start")
			}
			reads.reset()
			args, _ := json.Marshal(map[string]string{"name": c.name})
			e.finish(j.Ref.ID, outcomeFor(toolGreet, args))
			mustMatch(t, await(t, res), 200,
				`{"id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"Hello, `+c.name+`!"}]}}`)
			if got := reads.n(); got != c.reads {
				t.Errorf("a %d-byte name: %d record reads after the task ended, want %d", len(c.name), got, c.reads)
			}
		}
	})
}
