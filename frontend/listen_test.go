package frontend_test

// Listen streams of task notifications: each state once, in order, none
// skipped; and after a Redis restart, nothing lost silently.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// taskStream reads one listen stream's notifications/tasks.
type taskStream struct {
	l *client.Listener
	// seen is each task's states in the order they came, as
	// "status/statusMessage".
	seen map[string][]string
}

// openTaskStream opens subscriptions/listen for ids on the server at url and
// reads its acknowledgement.
func openTaskStream(t *testing.T, ctx context.Context, url string, ids []string) *taskStream {
	t.Helper()
	c := &client.Client{URL: url + "/mcp", Tasks: true}
	l, err := c.Listen(ctx, map[string]any{"taskIds": ids})
	if err != nil {
		t.Fatalf("subscriptions/listen: %v", err)
	}
	s := &taskStream{l: l, seen: map[string][]string{}}
	if m := s.read(t, ctx); m.Method != proto.NotifySubscribed {
		t.Fatalf("listen stream opened with %s %s", m.Method, m.Params)
	}
	return s
}

func (s *taskStream) read(t *testing.T, ctx context.Context) client.Message {
	t.Helper()
	select {
	case m, ok := <-s.l.C:
		if !ok {
			t.Fatal("the listen stream ended")
		}
		return m
	case <-ctx.Done():
		t.Fatalf("listen stream: nothing more within the bound; seen so far %v", s.seen)
	}
	return client.Message{}
}

// until reads notifications/tasks until done(task id, state) holds for one.
func (s *taskStream) until(t *testing.T, ctx context.Context, done func(id, state string) bool) {
	t.Helper()
	for {
		m := s.read(t, ctx)
		if m.Method != proto.NotifyTasks {
			t.Fatalf("listen stream sent %s %s", m.Method, m.Params)
		}
		var d proto.DetailedTask
		if err := json.Unmarshal(m.Params, &d); err != nil {
			t.Fatalf("notifications/tasks %s: %v", m.Params, err)
		}
		state := string(d.Status) + "/" + d.StatusMessage
		s.seen[d.TaskID] = append(s.seen[d.TaskID], state)
		if done(d.TaskID, state) {
			return
		}
	}
}

// TestListenEachStateOnce: tasks that run and end at once (claim and finish
// back to back, as a zero-second tool does), watched by several listen
// streams: every stream shows every task's states exactly once each, in
// order: queued, running, completed. Reading the record on each event used
// to show about half of them "completed" twice and never "Running".
func TestListenEachStateOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, nil)
		e.enq.setHold(true) // the test plays the worker
		ts := httptest.NewServer(e.h)
		defer ts.Close()
		const tasks, listeners = 40, 3
		ids := make([]string, tasks)
		for i := range ids {
			ids[i] = e.createTask(toolTaskJob)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		defer cancel()
		streams := make([]*taskStream, listeners)
		for i := range streams {
			streams[i] = openTaskStream(t, ctx, ts.URL, ids)
		}
		done := outcome(proto.StatusCompleted)
		for _, id := range ids {
			c, err := e.store.Claim(ctx, ref(id), 0, taskstate.Share{})
			if err != nil {
				t.Fatalf("claim %s: %v", id, err)
			}
			if err := e.store.Finish(ctx, ref(id), c.Attempt, done); err != nil {
				t.Fatalf("finish %s: %v", id, err)
			}
		}
		want := strings.Join([]string{"working/Queued", "working/Running", "completed/" + done.StatusMessage}, " ")
		for i, s := range streams {
			ended := 0
			s.until(t, ctx, func(_, state string) bool {
				if strings.HasPrefix(state, "completed/") {
					ended++
				}
				return ended == tasks
			})
			bad := 0
			for _, id := range ids {
				if got := strings.Join(s.seen[id], " "); got != want {
					bad++
					t.Errorf("stream %d, task %s: states %q, want %q", i, id, got, want)
				}
			}
			if bad > 0 {
				t.Errorf("stream %d: %d of %d tasks shown wrong", i, bad, tasks)
			}
		}
	})
}

// outcome is a completed or failed Finish outcome.
func outcome(status proto.TaskStatus) taskstate.Outcome {
	o := taskstate.Outcome{Status: status, StatusMessage: fmt.Sprintf("Done (%s)", status)}
	if status == proto.StatusCompleted {
		o.Result = json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)
	}
	return o
}
