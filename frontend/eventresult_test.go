package frontend_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
)

// readCounter counts the task record reads (HGETALL) sent through a client.
type readCounter struct{ n atomic.Int64 }

func (h *readCounter) count(cmd redis.Cmder) {
	if key, _ := cmd.Args()[1].(string); cmd.Name() == "hgetall" && strings.Contains(key, ":task:") {
		h.n.Add(1)
	}
}

func (h *readCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *readCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *readCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.count(cmd)
		}
		return next(ctx, cmds)
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
			reads int64
		}{
			{"Ada", 0},
			{strings.Repeat("a", taskstate.EventResultMax), 1},
		} {
			reads.n.Store(0)
			mustMatch(t, e.callTool(metaPlain, toolGreet, map[string]any{"name": c.name}), 200,
				`{"id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"Hello, `+c.name+`!"}]}}`)
			e.enq.wg.Wait()
			if got := reads.n.Load(); got != c.reads {
				t.Errorf("a %d-byte name: %d record reads, want %d", len(c.name), got, c.reads)
			}
		}
	})
}
