package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/mcpq/mcpq/proto"
)

// InputRequest is one input request of the server, under its key: an MRTR
// round of tools/call or a task's input_required state.
type InputRequest struct {
	// Key is the server's key of the request; a task never reuses one.
	Key string
	// Method is elicitation/create, sampling/createMessage or roots/list.
	Method string
	// Params are the request's params (proto.ElicitParams,
	// proto.CreateMessageParams, or none).
	Params json.RawMessage
}

// InputFunc answers one input request with its plain result
// (proto.ElicitResult, proto.CreateMessageResult or proto.ListRootsResult).
// For a task it is called at most once per key, across restarts when the
// client has a Journal.
type InputFunc func(ctx context.Context, req InputRequest) (any, error)

// maxRounds bounds the MRTR rounds of one tools/call.
const maxRounds = 32

// ToolAnswer is what tools/call answered: a result, or a task to follow.
type ToolAnswer struct {
	// Result is set when the call answered at once.
	Result *proto.CallToolResult
	// Task is set when the server made the call a task.
	Task *proto.CreateTaskResult
	// Handle follows Task (set with it).
	Handle *Handle
	// Input is set when the server needs input first (MRTR) and the client
	// has no Input func: answer it with CallToolRetry.
	Input *proto.InputRequiredResult
}

// CallTool calls a tool. With an Input func it answers the MRTR rounds
// itself (each retry a new request with the answers and the requestState as
// given). When the answer is a task and the client has a Journal, the task
// is in the journal before CallTool returns; if that write fails, CallTool
// returns the answer together with the error, so the task is never lost
// without the caller knowing.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*ToolAnswer, error) {
	extra, err := c.paramHeaders(name, args)
	if err != nil {
		return nil, err
	}
	var responses map[string]json.RawMessage
	state := ""
	for range maxRounds {
		params := map[string]any{"name": name}
		if args != nil {
			params["arguments"] = args
		}
		if responses != nil {
			params["inputResponses"] = responses
			if state != "" {
				params["requestState"] = state
			}
		}
		var raw json.RawMessage
		if err := c.call(ctx, proto.MethodToolsCall, name, params, extra, &raw); err != nil {
			return nil, err
		}
		a, err := decodeToolAnswer(raw)
		if err != nil {
			return nil, err
		}
		switch {
		case a.Task != nil:
			a.Handle = c.handle(a.Task.Task, name)
			if c.Journal != nil {
				e := Entry{Server: c.URL, TaskID: a.Task.TaskID, Tool: name, ArgumentsDigest: digest(args),
					CreatedAt: parseTime(a.Task.CreatedAt), TTLMs: a.Task.TTLMs}
				if err := c.Journal.Put(ctx, e); err != nil {
					return a, fmt.Errorf("task %s not journaled: %w", a.Task.TaskID, err)
				}
			}
			return a, nil
		case a.Input != nil && c.Input != nil:
			responses, err = c.answerAll(ctx, a.Input.InputRequests)
			if err != nil {
				return nil, err
			}
			state = a.Input.RequestState
		default:
			return a, nil
		}
	}
	return nil, fmt.Errorf("tools/call %s: still asking for input after %d rounds", name, maxRounds)
}

// answerAll answers every request of reqs through c.Input, in key order.
func (c *Client) answerAll(ctx context.Context, reqs map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(reqs))
	for _, key := range sortedKeys(reqs) {
		b, err := c.answerOne(ctx, key, reqs[key])
		if err != nil {
			return nil, err
		}
		out[key] = b
	}
	return out, nil
}

func (c *Client) answerOne(ctx context.Context, key string, raw json.RawMessage) (json.RawMessage, error) {
	var r struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("input request %q: %w", key, err)
	}
	v, err := c.Input(ctx, InputRequest{Key: key, Method: r.Method, Params: r.Params})
	if err != nil {
		return nil, fmt.Errorf("input request %q: %w", key, err)
	}
	return json.Marshal(v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// digest is the hex SHA-256 of the arguments' JSON.
func digest(args any) string {
	b, _ := json.Marshal(args)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Now()
	}
	return t
}

// decodeToolAnswer reads a tools/call result by its resultType: an absent
// one means complete (a server before 2026-07-28); an unknown one is an error.
func decodeToolAnswer(raw json.RawMessage) (*ToolAnswer, error) {
	var kind proto.ResultBase
	if err := json.Unmarshal(raw, &kind); err != nil {
		return nil, err
	}
	switch kind.ResultType {
	case proto.ResultTask:
		var t proto.CreateTaskResult
		return &ToolAnswer{Task: &t}, json.Unmarshal(raw, &t)
	case proto.ResultInputRequired:
		var in proto.InputRequiredResult
		return &ToolAnswer{Input: &in}, json.Unmarshal(raw, &in)
	case proto.ResultComplete, "":
		var r proto.CallToolResult
		return &ToolAnswer{Result: &r}, json.Unmarshal(raw, &r)
	}
	return nil, fmt.Errorf("tools/call answered an unknown resultType %q", kind.ResultType)
}

// CallToolRetry retries a tools/call that answered input_required (MRTR):
// the same name and arguments, the answers, and the requestState as given
// ("" sends none).
func (c *Client) CallToolRetry(ctx context.Context, name string, args any, responses map[string]any, state string) (*ToolAnswer, json.RawMessage, error) {
	params := map[string]any{"name": name, "inputResponses": responses}
	if state != "" {
		params["requestState"] = state
	}
	if args != nil {
		params["arguments"] = args
	}
	extra, err := c.paramHeaders(name, args)
	if err != nil {
		return nil, nil, err
	}
	var raw json.RawMessage
	if err := c.call(ctx, proto.MethodToolsCall, name, params, extra, &raw); err != nil {
		return nil, nil, err
	}
	a, err := decodeToolAnswer(raw)
	if a != nil && a.Task != nil {
		a.Handle = c.handle(a.Task.Task, name)
	}
	return a, raw, err
}

// GetTask calls tasks/get.
func (c *Client) GetTask(ctx context.Context, id string) (*proto.GetTaskResult, error) {
	var r proto.GetTaskResult
	return &r, c.Call(ctx, proto.MethodTasksGet, id, map[string]any{"taskId": id}, &r)
}

// UpdateTask calls tasks/update with answers to a task's input requests.
func (c *Client) UpdateTask(ctx context.Context, id string, responses map[string]any) (*proto.Ack, error) {
	var r proto.Ack
	return &r, c.Call(ctx, proto.MethodTasksUpd, id, map[string]any{"taskId": id, "inputResponses": responses}, &r)
}

// CancelTask calls tasks/cancel.
func (c *Client) CancelTask(ctx context.Context, id string) (*proto.Ack, error) {
	var r proto.Ack
	return &r, c.Call(ctx, proto.MethodTasksCncl, id, map[string]any{"taskId": id}, &r)
}

// Wait polls tasks/get until the task is terminal, honouring pollIntervalMs
// (at most maxPoll between polls), or until ctx is done. It is the bare
// loop; a Handle also answers input, listens and retries.
func (c *Client) Wait(ctx context.Context, id string, maxPoll time.Duration) (*proto.GetTaskResult, error) {
	for {
		t, err := c.GetTask(ctx, id)
		if err != nil {
			return nil, err
		}
		if t.Status.Terminal() {
			return t, nil
		}
		d := maxPoll
		if t.PollIntervalMs != nil {
			d = min(d, time.Duration(*t.PollIntervalMs)*time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d):
		}
	}
}

// ReadResource calls resources/read (mcpq serves a task's large stored
// payloads, named in resource_link blocks, this way to their owner).
func (c *Client) ReadResource(ctx context.Context, uri string) (*proto.ReadResourceResult, error) {
	var r proto.ReadResourceResult
	return &r, c.Call(ctx, proto.MethodResourcesRead, uri, map[string]any{"uri": uri}, &r)
}
