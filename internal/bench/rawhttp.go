package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpq/mcpq/taskstate"
)

// The load generator speaks HTTP/1.1 over its own keep-alive connections:
// each goroutine writes pre-encoded request bytes and parses the answer
// with http.ReadResponse. This keeps the client's CPU cost (which shares
// the machine with the server) small and equal for every server measured.

// opTimeout bounds one request of the load generator.
const opTimeout = 30 * time.Second

// rawConn is one keep-alive connection of a load goroutine.
type rawConn struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
	body bytes.Buffer
}

func newRawConn(addr string) *rawConn { return &rawConn{addr: addr} }

func (r *rawConn) close() {
	if r.c != nil {
		_ = r.c.Close()
		r.c = nil
	}
}

// do sends one request and returns the status and body (valid until the
// next call).
func (r *rawConn) do(req []byte) (int, []byte, error) {
	if r.c == nil {
		c, err := net.DialTimeout("tcp", r.addr, 5*time.Second)
		if err != nil {
			return 0, nil, err
		}
		r.c = c
		if r.br == nil {
			r.br = bufio.NewReaderSize(c, 16<<10)
		} else {
			r.br.Reset(c)
		}
	}
	// A stalled server fails the operation instead of hanging the run.
	_ = r.c.SetDeadline(time.Now().Add(opTimeout))
	if _, err := r.c.Write(req); err != nil {
		r.close()
		return 0, nil, err
	}
	resp, err := http.ReadResponse(r.br, nil)
	if err != nil {
		r.close()
		return 0, nil, err
	}
	r.body.Reset()
	_, err = r.body.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.Close {
		r.close()
	}
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, r.body.Bytes(), nil
}

// header is one request header line.
type header struct{ name, value string }

// rawRequest encodes an HTTP/1.1 POST of body to path on addr.
func rawRequest(addr, path string, headers []header, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\n", path, addr)
	for _, h := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h.name, h.value)
	}
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}

// mcpHeaders are the headers every 2026-07-28 request carries.
func mcpHeaders(method, name string) []header {
	h := []header{{"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"},
		{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", method}}
	if name != "" {
		h = append(h, header{"Mcp-Name", name})
	}
	return h
}

// Per-request _meta: with and without the Tasks extension.
const (
	metaTasks = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"mcpqbench","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	metaPlain = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"mcpqbench","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}`
)

// toolCallRequest is a tools/call of name with empty arguments.
func toolCallRequest(addr, name, meta string, extra ...header) []byte {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":` + meta +
		`,"name":"` + name + `","arguments":{}}}`
	return rawRequest(addr, "/mcp", append(mcpHeaders("tools/call", name), extra...), []byte(body))
}

// idTemplate is a tasks/get request whose task id (in the Mcp-Name header
// and the body) is patched in per request, so millions of ids need no
// pre-encoded requests.
type idTemplate struct {
	req     []byte
	offsets []int
	idLen   int
}

// placeholderID has the length of the ids taskstate.NewID makes: fill
// patches ids of that length in place.
var placeholderID = strings.Repeat("X", len(taskstate.NewID()))

func newIDTemplate(addr, method string, extra ...header) *idTemplate {
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"_meta":` + metaTasks +
		`,"taskId":"` + placeholderID + `"}}`
	req := rawRequest(addr, "/mcp", append(mcpHeaders(method, placeholderID), extra...), []byte(body))
	t := &idTemplate{req: req, idLen: len(placeholderID)}
	for i := 0; ; {
		j := bytes.Index(req[i:], []byte(placeholderID))
		if j < 0 {
			break
		}
		t.offsets = append(t.offsets, i+j)
		i += j + len(placeholderID)
	}
	return t
}

// fill writes id into buf (a copy of the template) and returns it.
func (t *idTemplate) fill(buf []byte, id string) []byte {
	if len(id) != t.idLen {
		panic(fmt.Sprintf("bench: task id %q is not %d characters long", id, t.idLen))
	}
	buf = append(buf[:0], t.req...)
	for _, o := range t.offsets {
		copy(buf[o:o+t.idLen], id)
	}
	return buf
}

// fixedOp sends req on its own connection and checks the answer.
func fixedOp(addr string, req []byte, check func(status int, body []byte) error) NewOp {
	return func(int) (Op, func(), error) {
		c := newRawConn(addr)
		return func(context.Context) error {
			st, body, err := c.do(req)
			if err != nil {
				return err
			}
			return check(st, body)
		}, c.close, nil
	}
}

// idOp sends the template filled with a random id of ids.
func idOp(addr string, t *idTemplate, ids []string, check func(status int, body []byte) error) NewOp {
	return func(i int) (Op, func(), error) {
		c := newRawConn(addr)
		rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
		var buf []byte
		return func(context.Context) error {
			buf = t.fill(buf, ids[rng.IntN(len(ids))])
			st, body, err := c.do(buf)
			if err != nil {
				return err
			}
			return check(st, body)
		}, c.close, nil
	}
}

// expect200 checks the status and that the body contains want.
func expect200(want string) func(int, []byte) error {
	w := []byte(want)
	return func(st int, body []byte) error {
		if st != http.StatusOK || !bytes.Contains(body, w) {
			return fmt.Errorf("HTTP %d, want 200 with %q: %.300s", st, want, body)
		}
		return nil
	}
}
