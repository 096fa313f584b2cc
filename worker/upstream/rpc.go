package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"

	"github.com/mcpq/mcpq/proto"
)

// MaxLine is the longest line a stdio upstream may write (a message is one
// line). A longer one is a protocol violation: the session ends.
const MaxLine = 16 << 20

// message is any JSON-RPC message read from an upstream.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *proto.Error    `json:"error,omitempty"`
}

// reply is the answer to one request.
type reply struct {
	result json.RawMessage
	err    *proto.Error
}

// conn is a JSON-RPC connection over newline-delimited messages (stdio).
type conn struct {
	log *slog.Logger
	// onNote receives notifications; onRequest answers the server's
	// requests (both run on the read loop: keep them short).
	onNote    func(method string, params json.RawMessage)
	onRequest func(method string, params json.RawMessage) (any, *proto.Error)

	wmu sync.Mutex
	w   io.Writer

	mu      sync.Mutex
	next    int64
	pending map[string]chan reply
	err     error         // why the connection ended
	done    chan struct{} // closed when it ended
}

func newConn(w io.Writer, log *slog.Logger) *conn {
	return &conn{w: w, log: log, pending: map[string]chan reply{}, done: make(chan struct{})}
}

// call sends a request and waits for its answer, ctx's end or the
// connection's. id receives the request id before it is sent (for
// notifications/cancelled).
func (c *conn) call(ctx context.Context, method string, params any, id *json.RawMessage) (json.RawMessage, error) {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.next++
	key := strconv.FormatInt(c.next, 10)
	c.pending[key] = ch
	c.mu.Unlock()
	defer c.forget(key)
	if id != nil {
		*id = json.RawMessage(key)
	}
	if err := c.send(map[string]any{"jsonrpc": proto.JSONRPCVersion, "id": c.next, "method": method, "params": params}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		return r.result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, c.cause()
	}
}

func (c *conn) forget(key string) {
	c.mu.Lock()
	delete(c.pending, key)
	c.mu.Unlock()
}

// notify sends a notification.
func (c *conn) notify(method string, params any) error {
	return c.send(map[string]any{"jsonrpc": proto.JSONRPCVersion, "method": method, "params": params})
}

func (c *conn) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("upstream: encode: %w", err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("upstream: write: %w", err)
	}
	return nil
}

// close ends the connection with err (the first reason wins).
func (c *conn) close(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.done)
	}
}

func (c *conn) cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// errLineTooLong ends a session whose upstream wrote a line over MaxLine.
var errLineTooLong = fmt.Errorf("upstream wrote a line over %d bytes", MaxLine)

// readLoop reads messages from r until it ends, then closes c with
// ended's result (the process's exit, say).
func (c *conn) readLoop(r io.Reader, ended func(error) error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if err != nil {
			c.close(ended(err))
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		c.dispatch(line)
	}
}

// readLine reads one line of at most MaxLine bytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > MaxLine {
			return nil, errLineTooLong
		}
		line = append(line, frag...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

// dispatch routes one message: an answer to its waiting call, a
// notification to onNote, a request to onRequest. A line that is not a
// JSON-RPC message, or an answer to no request sent, is logged and
// dropped: nothing else is harmed.
func (c *conn) dispatch(line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != proto.JSONRPCVersion {
		c.log.Warn("upstream wrote a line that is not a JSON-RPC message; dropped", "line", clip(line, 200))
		return
	}
	switch {
	case m.Method != "" && len(m.ID) > 0:
		go c.answer(m)
	case m.Method != "":
		if c.onNote != nil {
			c.onNote(m.Method, m.Params)
		}
	case len(m.ID) > 0:
		c.mu.Lock()
		ch := c.pending[string(bytes.Trim(m.ID, `"`))]
		c.mu.Unlock()
		if ch == nil {
			c.log.Warn("upstream answered a request that was not sent; dropped", "id", string(m.ID))
			return
		}
		ch <- reply{result: m.Result, err: m.Error}
	default:
		c.log.Warn("upstream wrote a message without method or id; dropped", "line", clip(line, 200))
	}
}

// answer runs onRequest for a server's request and sends its answer.
func (c *conn) answer(m message) {
	var res any
	var rerr *proto.Error
	switch {
	case m.Method == "ping":
		res = struct{}{}
	case c.onRequest != nil:
		res, rerr = c.onRequest(m.Method, m.Params)
	default:
		rerr = proto.NewError(proto.CodeMethodNotFound, "Method not found: %s", m.Method)
	}
	out := map[string]any{"jsonrpc": proto.JSONRPCVersion, "id": m.ID}
	if rerr != nil {
		out["error"] = rerr
	} else {
		out["result"] = res
	}
	if err := c.send(out); err != nil {
		c.log.Warn("answer an upstream request", "method", m.Method, "err", err)
	}
}

// clip is b's first n bytes as text, for logs.
func clip(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
