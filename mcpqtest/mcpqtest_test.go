package mcpqtest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

type countArgs struct {
	To int `json:"to" mcpq:"minimum=1,maximum=100"`
}

// counter counts to in.To, one step per number and a checkpoint after
// each; the first delivery stops at 2 and waits for its context, as a
// worker that hangs mid-run. ended receives how each delivery ended.
func counter(ended chan<- error) worker.Tool {
	return worker.NewTool("count", "", func(ctx context.Context, c *worker.Call, in countArgs) (string, error) {
		var n int
		if _, err := c.LoadCheckpoint(&n); err != nil {
			return "", err
		}
		from := n
		for n < in.To {
			if n == 2 && c.Attempt == 1 {
				<-ctx.Done()
				ended <- ctx.Err()
				return "", ctx.Err()
			}
			if err := c.Step(ctx, func(ctx context.Context) error { n++; return nil }); err != nil {
				return "", err
			}
			if err := c.SaveCheckpoint(ctx, n); err != nil {
				return "", err
			}
			_ = c.Progress(ctx, fmt.Sprintf("at %d", n))
		}
		ended <- nil
		return fmt.Sprintf("counted %d to %d", from, n), nil
	})
}

func TestRedeliverResumesFromTheCheckpoint(t *testing.T) {
	ended := make(chan error, 2)
	env := mcpqtest.New(t, counter(ended))
	run := env.Call(t, "count", countArgs{To: 5})
	run.WaitMessage(t, "at 2")
	run.Redeliver(t)
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the lost delivery ended with %v, want its context cancelled", err)
	}
	if res := run.Result(t); res.Content[0].Text != "counted 2 to 5" {
		t.Errorf("result %q, want the second delivery to resume at 2", res.Content[0].Text)
	}
	if d := run.Deliveries(); len(d) != 2 || d[0] != 1 || d[1] <= d[0] {
		t.Errorf("deliveries %v, want attempt 1 and a later one", d)
	}
}

func TestExpireStopsARunningHandler(t *testing.T) {
	ended := make(chan error, 1)
	env := mcpqtest.New(t, counter(ended))
	run := env.Call(t, "count", countArgs{To: 5})
	run.WaitMessage(t, "at 2")
	run.Expire(t)
	if err := <-ended; err == nil {
		t.Error("the handler finished after its task expired")
	}
	if st := run.State(t); !st.Gone || st.Status != "" {
		t.Errorf("state after expiry %+v", st)
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	ended := make(chan error, 1)
	env := mcpqtest.New(t, counter(ended))
	run := env.Call(t, "count", countArgs{To: 5})
	run.WaitMessage(t, "at 2")
	run.Cancel(t)
	if st := run.End(t); st.Status != proto.StatusCancelled {
		t.Errorf("status %s, want cancelled", st.Status)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("handler ended with %v", err)
	}
}

func TestCallRefusesInvalidArguments(t *testing.T) {
	env := mcpqtest.New(t, counter(make(chan error, 1)))
	run := env.Call(t, "count", map[string]any{"to": 101})
	st := run.State(t)
	if run.TaskID() != "" || st.Status != proto.StatusCompleted || !st.Result.IsError {
		t.Fatalf("state %+v for invalid arguments", st)
	}
	if run.Deliveries() != nil {
		t.Errorf("the handler ran: %v", run.Deliveries())
	}
}

func TestLogsAreTheToolsMessagesInOrder(t *testing.T) {
	type none struct{}
	env := mcpqtest.New(t, worker.NewTool("chat", "", func(ctx context.Context, c *worker.Call, _ none) (string, error) {
		for _, w := range []string{"one", "two", "three"} {
			if err := c.Log(ctx, "warning", w); err != nil {
				return "", err
			}
		}
		return "done", nil
	}))
	run := env.Call(t, "chat", none{})
	logs := run.Logs(t)
	var got []string
	for _, m := range logs {
		got = append(got, fmt.Sprintf("%s/%s:%v", m.Level, m.Logger, m.Data))
	}
	if want := "warning/chat:one warning/chat:two warning/chat:three"; fmt.Sprint(got) != "["+want+"]" {
		t.Errorf("logs %v, want [%s]", got, want)
	}
	if res := run.Result(t); res.Content[0].Text != "done" {
		t.Errorf("result %+v", res)
	}
}
