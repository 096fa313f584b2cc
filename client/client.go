// Package client is a Go client for MCP 2026-07-28 with the Tasks extension
// over Streamable HTTP. It sends the per-request _meta and the routing
// headers (Mcp-Method, Mcp-Name, Mcp-Param-* from x-mcp-header, in the
// encoded form where a value needs it), reads JSON and SSE answers, turns
// every error code into a typed error (Code, RPCError), caches
// server/discover as its cache hints say, runs MRTR rounds through the
// Input callback, and hands back either a tool's result or a Handle to its
// task. A Handle follows the task (subscriptions/listen, with tasks/get
// polling at pollIntervalMs as the fallback), answers its input requests
// once per key, cancels it, or lets go of it; with a Journal every task id
// is on disk before CallTool returns, and Resume re-attaches after a crash.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpq/mcpq/proto"
)

// Client talks to one MCP endpoint. It is safe for concurrent use; set its
// fields before the first call.
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
	// Auth supplies a bearer token (Authorization) for every request and a
	// new one when the server refuses it (OAuth); nil sends only Header.
	Auth Authorizer
	// Meta holds extra _meta entries sent on every request, such as a W3C
	// "traceparent".
	Meta map[string]any
	// Input answers input requests: the MRTR rounds of tools/call and the
	// input_required state of a followed task. Nil: CallTool returns an
	// InputRequiredResult as ToolAnswer.Input, and a Handle waits for
	// someone else to answer.
	Input InputFunc
	// Journal records every task CallTool hands out (see Journal); nil
	// records nothing.
	Journal Journal
	// Poll bounds the wait between two tasks/get of a Handle: the server's
	// pollIntervalMs is kept within [Poll.Min, Poll.Max] (defaults 50 ms
	// and 30 s) and jittered by ±10%.
	Poll PollBounds
	// NoListen makes a Handle poll instead of following the task over
	// subscriptions/listen.
	NoListen bool

	nextID atomic.Int64

	mu        sync.Mutex
	discover  *proto.DiscoverResult
	discoUntl time.Time
	headers   map[string]map[string]string // tool -> argument -> header name (x-mcp-header)
}

// PollBounds bound the polling interval of a Handle.
type PollBounds struct {
	// Min is the shortest wait between polls (default 50 ms).
	Min time.Duration
	// Max is the longest wait between polls, also after errors (default 30 s).
	Max time.Duration
}

// meta is the per-request _meta this client sends, with the extra keys of
// ctx (WithMeta) under the protocol's own.
func (c *Client) meta(ctx context.Context) map[string]any {
	caps := c.Capabilities
	if c.Tasks {
		ext := map[string]json.RawMessage{proto.TasksExtension: json.RawMessage(`{}`)}
		for k, v := range caps.Extensions {
			ext[k] = v
		}
		caps.Extensions = ext
	}
	m := map[string]any{}
	if extra, ok := ctx.Value(metaKey{}).(map[string]any); ok {
		for k, v := range extra {
			m[k] = v
		}
	}
	m[proto.MetaProtocolVersion] = proto.ProtocolVersion
	m[proto.MetaClientCapabilities] = caps
	if c.Info != nil {
		m[proto.MetaClientInfo] = c.Info
	}
	for k, v := range c.Meta {
		m[k] = v
	}
	return m
}

// Call sends method with params (a map without _meta; _meta is added) and
// decodes the result into out. name is the Mcp-Name header value ("" for
// none). An unsupported-version answer (-32022) that lists the version this
// client speaks is retried once, with a new id.
func (c *Client) Call(ctx context.Context, method, name string, params map[string]any, out any) error {
	return c.call(ctx, method, name, params, nil, out)
}

func (c *Client) call(ctx context.Context, method, name string, params map[string]any, extra http.Header, out any) error {
	err := c.roundTrip(ctx, method, name, params, extra, out)
	var re *RPCError
	if errors.As(err, &re) && re.RPC.Code == proto.CodeUnsupportedProtocolVersion && supports(re.RPC.Data) {
		err = c.roundTrip(ctx, method, name, params, extra, out)
	}
	return err
}

// supports reports whether the data of a -32022 error lists the version
// this client speaks.
func supports(data any) bool {
	b, _ := json.Marshal(data)
	var d proto.UnsupportedVersionData
	if json.Unmarshal(b, &d) != nil {
		return false
	}
	for _, v := range d.Supported {
		if v == proto.ProtocolVersion {
			return true
		}
	}
	return false
}

// newRequest builds the POST of one JSON-RPC request with its headers.
func (c *Client) newRequest(ctx context.Context, id int64, method, name string, params map[string]any, extra http.Header) (*http.Request, error) {
	p := make(map[string]any, len(params)+1)
	for k, v := range params {
		p[k] = v
	}
	p["_meta"] = c.meta(ctx)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
	if err != nil {
		return nil, err
	}
	req, err := c.post(ctx, body, method, extra)
	if err != nil {
		return nil, err
	}
	if name != "" {
		req.Header.Set("Mcp-Name", EncodeHeaderValue(name))
	}
	return req, nil
}

// post is the POST of body (a JSON-RPC request of method) to the endpoint
// with the headers every request carries: Header, the context's, extra,
// then the protocol's own.
func (c *Client) post(ctx context.Context, body []byte, method string, extra http.Header) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	if h, ok := ctx.Value(headerKey{}).(http.Header); ok {
		for k, v := range h {
			req.Header[k] = v
		}
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", proto.ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	return req, nil
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) roundTrip(ctx context.Context, method, name string, params map[string]any, extra http.Header, out any) error {
	id := c.nextID.Add(1)
	resp, err := c.send(ctx, func() (*http.Request, error) { return c.newRequest(ctx, id, method, name, params, extra) })
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
	if err := json.Unmarshal(raw, &r); err != nil || (r.Error == nil && r.Result == nil) {
		if resp.StatusCode/100 != 2 {
			return &HTTPError{Status: resp.StatusCode, Body: truncate(raw)}
		}
		return fmt.Errorf("HTTP %d: undecodable answer %q", resp.StatusCode, truncate(raw))
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

// Discover returns the server/discover result, from the cache while its
// ttlMs lasts (ttlMs 0 is never cached).
func (c *Client) Discover(ctx context.Context) (*proto.DiscoverResult, error) {
	c.mu.Lock()
	if c.discover != nil && time.Now().Before(c.discoUntl) {
		d := c.discover
		c.mu.Unlock()
		return d, nil
	}
	c.mu.Unlock()
	var r proto.DiscoverResult
	if err := c.Call(ctx, proto.MethodDiscover, "", nil, &r); err != nil {
		return nil, err
	}
	if r.TTLMs > 0 {
		c.mu.Lock()
		c.discover, c.discoUntl = &r, time.Now().Add(time.Duration(r.TTLMs)*time.Millisecond)
		c.mu.Unlock()
	}
	return &r, nil
}

// ListTools calls tools/list (every page) and returns the tools a client may
// call: a tool whose x-mcp-header annotations are invalid is dropped, as the
// protocol requires. The valid annotations are remembered for CallTool.
func (c *Client) ListTools(ctx context.Context) ([]proto.Tool, error) {
	var all []proto.Tool
	headers := map[string]map[string]string{}
	cursor := ""
	for range 1000 {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page proto.ListToolsResult
		if err := c.Call(ctx, proto.MethodToolsList, "", params, &page); err != nil {
			return nil, err
		}
		for _, t := range page.Tools {
			h, err := ToolHeaders(t.InputSchema)
			if err != nil {
				continue
			}
			headers[t.Name] = h
			all = append(all, t)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	c.mu.Lock()
	c.headers = headers
	c.mu.Unlock()
	return all, nil
}

// paramHeaders are the Mcp-Param-* headers of a call of tool with args,
// from the x-mcp-header annotations ListTools saw (none before it).
func (c *Client) paramHeaders(tool string, args any) (http.Header, error) {
	c.mu.Lock()
	names := c.headers[tool]
	c.mu.Unlock()
	if len(names) == 0 || args == nil {
		return nil, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil, nil
	}
	h := http.Header{}
	for arg, name := range names {
		if v, ok := headerValue(m[arg]); ok {
			h["Mcp-Param-"+name] = []string{v}
		}
	}
	return h, nil
}
