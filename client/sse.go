package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/mcpq/mcpq/proto"
)

// readEvents calls fn with the data of each SSE event on r until fn
// returns false or the stream ends.
func readEvents(r io.Reader, fn func(data []byte) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if data.Len() > 0 {
				if !fn(bytes.Clone(data.Bytes())) {
					return nil
				}
				data.Reset()
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
		}
	}
	return sc.Err()
}

// finalEvent returns the first event of a response stream that is a
// response (it has an id).
func finalEvent(r io.Reader) ([]byte, error) {
	var out []byte
	err := readEvents(r, func(d []byte) bool {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(d, &m) == nil && len(m.ID) > 0 {
			out = d
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, errors.New("event stream ended without a response")
	}
	return out, nil
}

// Message is one JSON-RPC message of a listen stream.
type Message struct {
	// Method is set on notifications.
	Method string `json:"method"`
	// Params are the notification's params.
	Params json.RawMessage `json:"params"`
	// ID, Result and Error are set on the final response.
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *proto.Error    `json:"error"`
}

// Listener is an open subscriptions/listen stream.
type Listener struct {
	// ID is the listen request's JSON-RPC id: every notification on the
	// stream carries it as _meta["io.modelcontextprotocol/subscriptionId"].
	ID json.RawMessage
	// C delivers the stream's messages in order, the acknowledgement first;
	// it closes when the stream ends.
	C <-chan Message
}

// Listen opens subscriptions/listen with the given notifications filter
// (e.g. {"taskIds": [...]}). Cancel ctx to close the stream.
func (c *Client) Listen(ctx context.Context, filter map[string]any) (*Listener, error) {
	id := c.nextID.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": proto.MethodListen,
		"params": map[string]any{"_meta": c.meta(ctx), "notifications": filter}})
	if err != nil {
		return nil, err
	}
	resp, err := c.send(ctx, func() (*http.Request, error) { return c.post(ctx, body, proto.MethodListen, nil) })
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var r struct {
			Error *proto.Error `json:"error"`
		}
		if json.Unmarshal(raw, &r) == nil && r.Error != nil {
			return nil, &RPCError{RPC: r.Error, HTTPStatus: resp.StatusCode}
		}
		return nil, fmt.Errorf("listen: HTTP %d %s: %q", resp.StatusCode, ct, truncate(raw))
	}
	out := make(chan Message, 64)
	l := &Listener{ID: json.RawMessage(strconv.FormatInt(id, 10)), C: out}
	go func() {
		defer close(out)
		defer resp.Body.Close()
		_ = readEvents(resp.Body, func(d []byte) bool {
			var m Message
			if json.Unmarshal(d, &m) != nil {
				return true
			}
			select {
			case out <- m:
				return len(m.ID) == 0
			case <-ctx.Done():
				return false
			}
		})
	}()
	return l, nil
}
