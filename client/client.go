// Package client is a Go client for MCP 2026-07-28 with the Tasks extension
// over Streamable HTTP: it sends the per-request _meta and the routing
// headers, and understands both answers of tools/call (a result or a task).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpq/mcpq/proto"
)

// Client talks to one MCP endpoint. It is safe for concurrent use.
type Client struct {
	// URL is the MCP endpoint, e.g. http://127.0.0.1:8080/mcp.
	URL string
	// HTTP is the HTTP client (default http.DefaultClient).
	HTTP *http.Client
	// Tasks declares the Tasks extension on every request.
	Tasks bool
	// Capabilities are the other client capabilities declared on every
	// request (elicitation, sampling, roots); the Tasks flag adds its
	// extension to them.
	Capabilities proto.ClientCapabilities
	// Info names this client in _meta (optional).
	Info *proto.Implementation
	// Header is added to every request (e.g. Authorization).
	Header http.Header
	// Meta holds extra _meta entries sent on every request, such as a W3C
	// "traceparent".
	Meta map[string]any

	nextID atomic.Int64
}

// RPCError is a JSON-RPC error answer, with the HTTP status it came with.
type RPCError struct {
	// RPC is the JSON-RPC error object.
	RPC *proto.Error
	// HTTPStatus is the response's status code.
	HTTPStatus int
}

func (e *RPCError) Error() string { return fmt.Sprintf("%v (HTTP %d)", e.RPC, e.HTTPStatus) }

// Unwrap returns the JSON-RPC error.
func (e *RPCError) Unwrap() error { return e.RPC }

// meta is the per-request _meta this client sends.
func (c *Client) meta() map[string]any {
	caps := c.Capabilities
	if c.Tasks {
		ext := map[string]json.RawMessage{proto.TasksExtension: json.RawMessage(`{}`)}
		for k, v := range caps.Extensions {
			ext[k] = v
		}
		caps.Extensions = ext
	}
	m := map[string]any{proto.MetaProtocolVersion: proto.ProtocolVersion, proto.MetaClientCapabilities: caps}
	if c.Info != nil {
		m[proto.MetaClientInfo] = c.Info
	}
	for k, v := range c.Meta {
		m[k] = v
	}
	return m
}

// Call sends method with params (a map or struct without _meta; _meta is
// added) and decodes the result into out. name is the Mcp-Name header value
// ("" for none).
func (c *Client) Call(ctx context.Context, method, name string, params map[string]any, out any) error {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = c.meta()
	id := c.nextID.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", proto.ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var raw []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The answer is the stream's message with an id; notifications before it
		// (progress, logs) are skipped.
		raw, err = finalEvent(resp.Body)
	} else {
		raw, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	}
	if err != nil {
		return err
	}
	var r struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *proto.Error    `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("HTTP %d: undecodable answer %q: %w", resp.StatusCode, truncate(raw), err)
	}
	if r.Error != nil {
		return &RPCError{RPC: r.Error, HTTPStatus: resp.StatusCode}
	}
	if string(r.ID) != strconv.FormatInt(id, 10) {
		return fmt.Errorf("answer id %s for request id %d", r.ID, id)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(r.Result, out)
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// Discover calls server/discover.
func (c *Client) Discover(ctx context.Context) (*proto.DiscoverResult, error) {
	var r proto.DiscoverResult
	return &r, c.Call(ctx, proto.MethodDiscover, "", nil, &r)
}

// ToolAnswer is what tools/call answered: a result, or a task to poll.
type ToolAnswer struct {
	// Result is set when the call answered at once.
	Result *proto.CallToolResult
	// Task is set when the server made the call a task.
	Task *proto.CreateTaskResult
	// Input is set when the server needs input first (MRTR): answer it
	// with CallToolRetry.
	Input *proto.InputRequiredResult
}

// CallTool calls a tool.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*ToolAnswer, error) {
	var raw json.RawMessage
	params := map[string]any{"name": name}
	if args != nil {
		params["arguments"] = args
	}
	if err := c.Call(ctx, proto.MethodToolsCall, name, params, &raw); err != nil {
		return nil, err
	}
	return decodeToolAnswer(raw)
}

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
	}
	var r proto.CallToolResult
	return &ToolAnswer{Result: &r}, json.Unmarshal(raw, &r)
}

// GetTask calls tasks/get.
func (c *Client) GetTask(ctx context.Context, id string) (*proto.GetTaskResult, error) {
	var r proto.GetTaskResult
	return &r, c.Call(ctx, proto.MethodTasksGet, id, map[string]any{"taskId": id}, &r)
}

// CallToolRetry retries a tools/call that answered input_required (MRTR):
// the same name and arguments, the answers, and the requestState as given.
func (c *Client) CallToolRetry(ctx context.Context, name string, args any, responses map[string]any, state string) (*ToolAnswer, json.RawMessage, error) {
	params := map[string]any{"name": name, "inputResponses": responses, "requestState": state}
	if args != nil {
		params["arguments"] = args
	}
	var raw json.RawMessage
	if err := c.Call(ctx, proto.MethodToolsCall, name, params, &raw); err != nil {
		return nil, nil, err
	}
	a, err := decodeToolAnswer(raw)
	return a, raw, err
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
// (at most maxPoll between polls), or until ctx is done.
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
