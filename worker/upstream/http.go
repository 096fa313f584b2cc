package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/mcpq/mcpq/proto"
)

// httpTransport speaks Streamable HTTP: each message is a POST; the answer
// to a request comes as JSON or on the POST's event stream, with the
// server's notifications and requests before it (a request is answered
// with another POST). It reuses conn for ids and routing: conn writes each
// message to Write, which posts it.
type httpTransport struct {
	spec   *Spec
	client *http.Client
	c      *conn
	ctx    context.Context // ends when the transport closes
	stop   context.CancelFunc

	mu        sync.Mutex
	sessionID string
	version   string
	principal string // the running call's principal (Spec.PrincipalHeader)
}

// forward sends principal in Spec.PrincipalHeader with every request
// until the returned func runs (one call at a time runs on a transport).
func (h *httpTransport) forward(principal string) func() {
	h.mu.Lock()
	h.principal = principal
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		h.principal = ""
		h.mu.Unlock()
	}
}

func newHTTPTransport(spec *Spec, log *slog.Logger) *httpTransport {
	ctx, stop := context.WithCancel(context.Background())
	h := &httpTransport{spec: spec, client: &http.Client{}, ctx: ctx, stop: stop}
	h.c = newConn(h, log)
	return h
}

func (h *httpTransport) call(ctx context.Context, method string, params any, id *json.RawMessage) (json.RawMessage, error) {
	return h.c.call(ctx, method, params, id)
}
func (h *httpTransport) notify(method string, params any) error { return h.c.notify(method, params) }
func (h *httpTransport) done() <-chan struct{}                  { return h.c.done }
func (h *httpTransport) cause() error                           { return h.c.cause() }
func (h *httpTransport) handle(n noteFunc, r requestFunc)       { h.c.onNote, h.c.onRequest = n, r }
func (h *httpTransport) setVersion(v string)                    { h.mu.Lock(); h.version = v; h.mu.Unlock() }

func (h *httpTransport) close() {
	h.c.close(errClosed)
	h.stop()
}

// Write posts one message (conn.send's line).
func (h *httpTransport) Write(b []byte) (int, error) {
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		return 0, err
	}
	resp, err := h.post(b, m)
	if err != nil {
		return 0, fmt.Errorf("upstream %s: POST: %w", h.spec.Name, err)
	}
	if m.Method != "" && len(m.ID) > 0 {
		go h.read(resp, m.ID)
		return len(b), nil
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		return 0, fmt.Errorf("upstream %s: POST answered %s", h.spec.Name, resp.Status)
	}
	return len(b), nil
}

func (h *httpTransport) post(b []byte, m message) (*http.Response, error) {
	req, err := http.NewRequestWithContext(h.ctx, http.MethodPost, h.spec.URL, bytes.NewReader(bytes.TrimSpace(b)))
	if err != nil {
		return nil, err
	}
	for k, v := range h.spec.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	h.mu.Lock()
	if h.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", h.sessionID)
	}
	if h.version != "" {
		req.Header.Set("MCP-Protocol-Version", h.version)
	}
	if h.version == VersionStateless && m.Method != "" {
		routingHeaders(req.Header, m)
	}
	if h.principal != "" && h.spec.PrincipalHeader != "" {
		req.Header.Set(h.spec.PrincipalHeader, h.principal)
	}
	h.mu.Unlock()
	return h.client.Do(req)
}

// read routes what answers the request id: JSON, or an event stream.
func (h *httpTransport) read(resp *http.Response, id json.RawMessage) {
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		h.mu.Lock()
		h.sessionID = sid
		h.mu.Unlock()
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	body := io.LimitReader(resp.Body, MaxLine)
	switch {
	case resp.StatusCode == http.StatusNotFound && h.hasSession():
		h.c.close(fmt.Errorf("upstream %s: the HTTP session ended (404)", h.spec.Name))
	case ct == "text/event-stream":
		h.events(resp.Body)
	case ct == "application/json":
		b, _ := io.ReadAll(body)
		h.c.dispatch(b)
		if resp.StatusCode >= 300 && !h.answered(b) {
			h.fail(id, resp.Status)
		}
	default:
		b, _ := io.ReadAll(io.LimitReader(body, 512))
		h.fail(id, fmt.Sprintf("%s %s", resp.Status, clip(b, 200)))
	}
}

// fail answers id with an error from the HTTP exchange.
func (h *httpTransport) fail(id json.RawMessage, why string) {
	b, _ := json.Marshal(message{JSONRPC: "2.0", ID: id, Error: proto.NewError(proto.CodeInternalError, "upstream HTTP: %s", why)})
	h.c.dispatch(b)
}

// answered reports whether b is a JSON-RPC response.
func (h *httpTransport) answered(b []byte) bool {
	var m message
	return json.Unmarshal(b, &m) == nil && len(m.ID) > 0 && (m.Result != nil || m.Error != nil)
}

func (h *httpTransport) hasSession() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessionID != ""
}

// events dispatches each event's data as a message.
func (h *httpTransport) events(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				h.c.dispatch([]byte(strings.Join(data, "\n")))
			}
			data = data[:0]
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if len(data) > 0 {
		h.c.dispatch([]byte(strings.Join(data, "\n")))
	}
	if err := sc.Err(); err != nil && !errors.Is(err, context.Canceled) {
		h.c.log.Warn("upstream event stream", "err", err)
	}
}

// routingHeaders sets the headers a 2026-07-28 server routes by: Mcp-Method,
// and Mcp-Name with what the method names (a tool or prompt, a resource's
// URI, a task id), in the =?base64?...?= form when it is not plain ASCII.
func routingHeaders(h http.Header, m message) {
	h.Set("Mcp-Method", m.Method)
	var p struct {
		Name   string `json:"name"`
		URI    string `json:"uri"`
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(m.Params, &p)
	name := ""
	switch m.Method {
	case proto.MethodToolsCall, proto.MethodPromptsGet:
		name = p.Name
	case proto.MethodResourcesRead:
		name = p.URI
	case proto.MethodTasksGet, proto.MethodTasksUpd, proto.MethodTasksCncl:
		name = p.TaskID
	default:
		return
	}
	for _, r := range name {
		if r < 0x20 || r > 0x7e {
			name = "=?base64?" + base64.StdEncoding.EncodeToString([]byte(name)) + "?="
			break
		}
	}
	h.Set("Mcp-Name", name)
}
