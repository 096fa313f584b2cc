package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// clientCapabilities is what mcpq declares upstream (initialize, or the
// stateless era's _meta): it relays elicitation, sampling and roots
// requests to the task's client (relay). A task whose client did not
// declare one of them answers that request with -32021.
var clientCapabilities = map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}, "roots": map[string]any{}}

// statelessCapabilities adds the Tasks extension for a 2026-07-28
// upstream: it may answer a call with a task, which mcpq follows (follow.go).
var statelessCapabilities = map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{},
	"roots": map[string]any{}, "extensions": map[string]any{proto.TasksExtension: map[string]any{}}}

// relay is the handler of the requests the upstream sends during a call on
// c: elicitation/create, sampling/createMessage and roots/list become the
// task's input requests (Call.HoldInput: the task goes input_required with
// the upstream's request inside, the call and its session stay open), and
// the client's answer is the upstream's answer. Keys are upstream-<attempt>-<n>,
// new for each request. ctx is the call's step context.
func relay(ctx context.Context, c *worker.Call) requestFunc {
	var n atomic.Int64
	return func(method string, params json.RawMessage) (any, *proto.Error) {
		switch method {
		case proto.MethodElicit, proto.MethodCreateMessage, proto.MethodListRoots:
		default:
			return nil, proto.NewError(proto.CodeMethodNotFound, "Method not found: %s", method)
		}
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{}`)
		}
		key := fmt.Sprintf("upstream-%d-%d", c.Attempt, n.Add(1))
		answers, err := c.HoldInput(ctx, map[string]proto.InputRequest{key: {Method: method, Params: params}})
		var perr *proto.Error
		switch {
		case errors.As(err, &perr):
			return nil, perr
		case err != nil:
			return nil, proto.NewError(proto.CodeInternalError, "Internal error: no answer: %v", err)
		}
		return answers[key], nil
	}
}
