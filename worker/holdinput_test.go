package worker_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// holder asks for a name with HoldInput inside a step and answers with it.
func holder() worker.Tool {
	return worker.Tool{Name: "hold", Description: "asks and waits", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			var got json.RawMessage
			err := c.Step(ctx, func(ctx context.Context) error {
				answers, err := c.HoldInput(ctx, map[string]proto.InputRequest{"name": {Method: proto.MethodElicit,
					Params: proto.ElicitParams{Message: "Your name?", RequestedSchema: json.RawMessage(`{"type":"object"}`)}}})
				got = answers["name"]
				return err
			})
			if err != nil {
				return nil, err
			}
			return worker.TextResult(string(got)), nil
		}}
}

// TestHoldInputWaitsInTheSameDelivery: the task shows input_required with
// the request while the handler waits; the answer reaches the same
// delivery, which completes the task; no second delivery runs.
func TestHoldInputWaitsInTheSameDelivery(t *testing.T) {
	env := mcpqtest.New(t, holder())
	run := env.Call(t, "hold", nil)
	reqs := run.Input(t)
	if r, ok := reqs["name"]; !ok || r.Method != proto.MethodElicit {
		t.Fatalf("input requests: %+v", reqs)
	}
	run.Accept(t, "name", map[string]any{"name": "Ada"})
	res := run.Result(t)
	var ans proto.ElicitResult
	if err := json.Unmarshal([]byte(res.Content[0].Text), &ans); err != nil || ans.Action != proto.ElicitAccept ||
		string(ans.Content) != `{"name":"Ada"}` {
		t.Fatalf("the handler got %q (%v)", res.Content[0].Text, err)
	}
	if d := run.Deliveries(); !reflect.DeepEqual(d, []int64{1}) {
		t.Errorf("deliveries %v, want one: the wait kept its delivery", d)
	}
}

// TestHoldInputCancelled: a cancel while the handler waits ends its wait
// with ErrCancelled and the task cancelled.
func TestHoldInputCancelled(t *testing.T) {
	env := mcpqtest.New(t, holder())
	run := env.Call(t, "hold", nil)
	run.Input(t)
	run.Cancel(t)
	if st := run.End(t); st.Status != proto.StatusCancelled {
		t.Fatalf("ended %s (%s)", st.Status, st.StatusMessage)
	}
	if d := run.Deliveries(); len(d) != 1 {
		t.Errorf("deliveries %v, want one", d)
	}
}

// TestHoldInputNeedsTheClientCapability: as Input, a kind the client did
// not declare is -32021 before anything is asked.
func TestHoldInputNeedsTheClientCapability(t *testing.T) {
	env := mcpqtest.New(t, holder())
	st := env.Call(t, "hold", nil, mcpqtest.WithCapabilities(proto.ClientCapabilities{})).End(t)
	if st.Status != proto.StatusFailed || st.Error == nil || st.Error.Code != proto.CodeMissingRequiredClientCapability {
		t.Fatalf("ended %s %+v", st.Status, st.Error)
	}
}
