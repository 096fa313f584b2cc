package frontend

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/mcpq/mcpq/internal/redisconn"
	"github.com/mcpq/mcpq/proto"
)

// nullID is the id of an error response to a request whose id is unknown.
var nullID = json.RawMessage("null")

// serveMCP handles POST /mcp: one JSON-RPC request or notification per body.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	principal, err := s.admit(w, r)
	if err != nil {
		s.writeError(w, nullID, err)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" && !isJSONMediaType(ct) { // the plain value without a parse (it allocates)
		s.writeError(w, nullID, withStatus(proto.NewError(proto.CodeInvalidRequest,
			"Content-Type must be application/json"), http.StatusUnsupportedMediaType))
		return
	}
	body, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.writeError(w, nullID, withStatus(proto.NewError(proto.CodeInvalidRequest,
				"Request body exceeds %d bytes", s.cfg.MaxBodyBytes), http.StatusRequestEntityTooLarge))
			return
		}
		// The error names socket addresses: not for the client.
		s.log.Debug("request body unreadable", "err", err)
		s.writeError(w, nullID, withStatus(proto.NewError(proto.CodeParseError, "Parse error: the request body could not be read"), http.StatusBadRequest))
		return
	}
	// Before any decode: a body of many small values (a 4 MiB array of
	// 2M numbers) costs 50 bytes and more per value to decode, so it is
	// refused by count on the raw bytes (issue 25, item 7).
	if _, n := jsonShape(body); s.cfg.MaxJSONValues > 0 && n > s.cfg.MaxJSONValues {
		s.writeError(w, nullID, withStatus(proto.NewError(proto.CodeInvalidRequest,
			"Request body holds more than %d JSON values", s.cfg.MaxJSONValues), http.StatusRequestEntityTooLarge))
		return
	}
	if s.era != nil && s.era.response(w, r, principal, body) { // a 2025-11-25 client answering an input request
		return
	}
	req, rerr := parseRequest(body, s.cfg.MaxDepth)
	if rerr != nil {
		id := nullID
		if req != nil && validID(req.ID) {
			id = req.ID
		}
		s.writeError(w, id, rerr)
		return
	}
	if req.IsNotification() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	c := &call{req: req, httpReq: r, principal: principal, resp: newResponder(w, r)}
	res, err := s.dispatch(c)
	if err != nil {
		pe, status := toRPC(err)
		noteError(w, pe.Code)
		switch {
		case r.Context().Err() != nil && errors.Is(err, r.Context().Err()):
			// The client went away (a closed listen stream, an abandoned
			// wait): nothing failed on mcpq's side.
			s.log.Debug("client gone", "method", req.Method, "err", err, traceAttr(c.trace))
		case status == http.StatusServiceUnavailable && redisconn.IsAtCapacity(err):
			s.notes.warn(s.log, "request failed: redis at capacity (maxmemory)", "method", req.Method, "err", err, traceAttr(c.trace))
		case status == http.StatusServiceUnavailable:
			s.notes.warn(s.log, "request failed: redis unavailable", "method", req.Method, "err", err, traceAttr(c.trace))
		case pe.Code == proto.CodeInternalError && status == http.StatusOK:
			s.log.Error("request failed", "method", req.Method, "err", err, traceAttr(c.trace))
		}
		if r.Context().Err() != nil && c.resp.resumable() {
			return // a broken resumable stream: its answer goes to the client that resumes it (an era's)
		}
		if c.hook != nil {
			status = c.hook.Status(err, status)
		}
		setRetryAfter(w.Header(), status)
		c.resp.finish(status, s.encode(proto.Response{JSONRPC: proto.JSONRPCVersion, ID: req.ID, Error: pe}))
		return
	}
	c.resp.finish(http.StatusOK, s.encode(proto.Response{JSONRPC: proto.JSONRPCVersion, ID: req.ID, Result: res}))
}

// isJSONMediaType reports whether a Content-Type names application/json
// (any parameters, any case).
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// parseRequest decodes and checks a JSON-RPC envelope. On error it may
// still return the request, so the error can keep its id.
func parseRequest(body []byte, maxDepth int) (*proto.Request, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		if !json.Valid(body) {
			return nil, proto.NewError(proto.CodeParseError, "Parse error: body is not valid JSON")
		}
		return nil, proto.NewError(proto.CodeInvalidRequest, "Invalid Request: expected one JSON-RPC object (batches are not supported)")
	}
	if d := jsonDepth(body); d > maxDepth {
		if !json.Valid(body) {
			return nil, proto.NewError(proto.CodeParseError, "Parse error: body is not valid JSON")
		}
		return nil, proto.NewError(proto.CodeInvalidRequest, "Invalid Request: JSON nested %d deep, more than %d", d, maxDepth)
	}
	var req proto.Request
	if err := decodeEnvelope(body, &req); isSyntaxError(err) {
		if json.Valid(body) { // valid JSON (RFC 8259 only says names SHOULD be unique): a duplicate name
			return nil, proto.NewError(proto.CodeInvalidRequest, "Invalid Request: duplicate member name in an object")
		}
		return nil, proto.NewError(proto.CodeParseError, "Parse error: body is not valid JSON")
	} else if err != nil {
		// Salvage the id for the error response when it is readable.
		var idOnly struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(body, &idOnly)
		return &proto.Request{ID: idOnly.ID}, proto.NewError(proto.CodeInvalidRequest, "Invalid Request: %v", err)
	}
	switch {
	case req.JSONRPC != proto.JSONRPCVersion:
		return &req, proto.NewError(proto.CodeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`)
	case req.Method == "":
		return &req, proto.NewError(proto.CodeInvalidRequest, `Invalid Request: "method" is required`)
	case len(req.ID) > 0 && !validID(req.ID):
		return &req, proto.NewError(proto.CodeInvalidRequest, `Invalid Request: "id" must be a string or a number`)
	case len(req.Params) > 0 && !bytes.Equal(req.Params, []byte("null")) && req.Params[0] != '{':
		return &req, proto.NewError(proto.CodeInvalidRequest, `Invalid Request: "params" must be an object`)
	}
	return &req, nil
}

// jsonDepth is the deepest nesting of objects and arrays in valid JSON.
func jsonDepth(b []byte) int {
	d, _ := jsonShape(b)
	return d
}

// jsonShape is the deepest nesting of objects and arrays in valid JSON and
// the number of its values past the first of each container (the commas
// outside strings), read in one pass over the bytes that allocates nothing.
func jsonShape(b []byte) (deepest, values int) {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ',':
			values++
		case c == '{' || c == '[':
			depth++
			values++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest, values
}

// admit authenticates the request and charges the principal's rate limit:
// 401 (with WWW-Authenticate) for missing or wrong credentials, 503 when
// they cannot be checked, 429 (with Retry-After) past the rate limit.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (string, error) {
	principal, err := s.cfg.Auth.Authenticate(r)
	var unavailable *UnavailableError
	switch {
	case errors.As(err, &unavailable):
		s.notes.warn(s.log, "authentication unavailable", "err", err)
		return "", withStatus(proto.NewError(proto.CodeInternalError, "Authentication is unavailable; try again"), http.StatusServiceUnavailable)
	case err != nil:
		challenge := `Bearer realm="mcpq"`
		if ch, ok := s.cfg.Auth.(Challenger); ok {
			challenge = ch.Challenge(r, err)
		} else if r.Header.Get("Authorization") != "" {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		// Close after the answer, without reading the body: an
		// unauthenticated client cannot hold the connection. net/http
		// drains up to 256 KiB of an unread body after the handler, so
		// reads are made to fail at once (ErrNotSupported off a real
		// connection, as under httptest, is ignored).
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		return "", withStatus(proto.NewError(proto.CodeInvalidRequest, "Unauthorized: %v", err), http.StatusUnauthorized)
	}
	if s.cfg.OnAuthenticated != nil {
		s.cfg.OnAuthenticated(r)
	}
	if s.cfg.RateLimit > 0 {
		ok, wait, err := s.buckets.Allow(r.Context(), principal, s.cfg.RateLimit, s.cfg.RateBurst)
		if err != nil {
			return "", err
		}
		if !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			return "", withStatus(proto.NewError(proto.CodeInternalError, "Rate limit exceeded: retry after %s", wait.Round(time.Millisecond)),
				http.StatusTooManyRequests)
		}
	}
	return principal, nil
}

// validID reports whether id is a JSON string (valid UTF-8, so it can be
// echoed) or number.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"':
		return utf8.Valid(id)
	case c == '-' || (c >= '0' && c <= '9'):
		return true
	}
	return false
}

// dispatch validates the per-request _meta and headers and runs the method.
func (s *Server) dispatch(c *call) (any, error) {
	if s.era != nil && s.era.claims(c) {
		return s.era.serve(c)
	}
	if c.req.Method == proto.MethodInitialize && !modernVersion(c.req.Params) {
		return nil, s.refuseInitialize(c)
	}
	m, ok := s.methods[c.req.Method]
	if !ok {
		return nil, proto.NewError(proto.CodeMethodNotFound, "Method not found: %s", c.req.Method)
	}
	noteMethod(c.resp.w, c.req.Method)
	meta, names, err := checkMeta(c.req.Params)
	if err != nil {
		return nil, err
	}
	c.meta, c.names = meta, names
	if err := checkHeaders(c.httpReq.Header, c.req, meta, names); err != nil {
		return nil, err
	}
	if err := s.checkVersion(meta); err != nil {
		return nil, err
	}
	ctx, span := s.startSpan(c.httpReq.Context(), c)
	defer span.End()
	c.trace = span.SpanContext()
	res, err := m(ctx, c)
	if err != nil {
		endSpan(span, err)
		return nil, err
	}
	return s.withMeta(res), nil
}

// withMeta stamps serverInfo into the result's _meta.
func (s *Server) withMeta(res any) any {
	switch r := res.(type) {
	case interface{ Base() *proto.ResultBase }:
		b := r.Base()
		if b.ResultType == "" {
			b.ResultType = proto.ResultComplete
		}
		if b.Meta == nil {
			b.Meta = s.resultMeta
		} else {
			for k, v := range s.resultMeta {
				b.Meta[k] = v
			}
		}
	case rawResult:
		if r == nil { // a stored result of JSON null
			r = rawResult{}
			res = r
		}
		var meta map[string]any
		if m, ok := r["_meta"]; ok {
			_ = json.Unmarshal(m, &meta)
		}
		if meta == nil {
			meta = map[string]any{}
		}
		for k, v := range s.resultMeta {
			meta[k] = v
		}
		r["_meta"], _ = json.Marshal(meta)
		if _, ok := r["resultType"]; !ok {
			r["resultType"] = json.RawMessage(`"` + proto.ResultComplete + `"`)
		}
	}
	return res
}

// rawResult is a stored result re-sent as is (a finished tool call).
type rawResult map[string]json.RawMessage

// writeError answers a request that never reached dispatch.
func (s *Server) writeError(w http.ResponseWriter, id json.RawMessage, err error) {
	pe, status := toRPC(err)
	noteError(w, pe.Code)
	setRetryAfter(w.Header(), status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(s.encode(proto.Response{JSONRPC: proto.JSONRPCVersion, ID: id, Error: pe}))
}

// encode marshals a response; one that cannot be encoded becomes an internal error.
func (s *Server) encode(r proto.Response) []byte {
	if b := s.encodeTask(r); b != nil {
		return b
	}
	b, err := encodeJSON(r)
	if err != nil {
		s.log.Error("encode response", "err", err)
		b, _ = json.Marshal(proto.Response{JSONRPC: proto.JSONRPCVersion, ID: r.ID,
			Error: proto.NewError(proto.CodeInternalError, "Internal error: response not encodable")})
	}
	return b
}

// readBody reads r's body, at most limit bytes (more is an
// *http.MaxBytesError). A declared Content-Length within the limit sizes
// the buffer once, where io.ReadAll would grow it by doubling and
// allocate about twice the body.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	n := r.ContentLength
	if n <= 0 || n > limit {
		return io.ReadAll(body)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, err
	}
	// net/http ends the body at Content-Length; another reader might not.
	rest, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	return append(buf, rest...), nil
}

// encodeTask is encode's fast way for the answers of a create and a
// tasks/get (a *proto.CreateTaskResult or *proto.GetTaskResult whose _meta
// is the server's own, withMeta's s.resultMeta): the envelope and the
// _meta are written as bytes, around encodeJSON of the result without its
// _meta. The same bytes as encodeJSON of r (encode_internal_test.go), at
// about half its allocations: a map of any costs encodeJSON four, the
// envelope's interface and raw id three more. nil for every other
// response, and for an id whose bytes encodeJSON might rewrite (HTML
// characters, escapes, spaces), which takes the general way.
func (s *Server) encodeTask(r proto.Response) []byte {
	if r.Error != nil || !plainID(r.ID) || s.metaJSON == nil {
		return nil
	}
	var base *proto.ResultBase
	switch res := r.Result.(type) {
	case *proto.CreateTaskResult:
		base = &res.ResultBase
	case *proto.GetTaskResult:
		base = &res.ResultBase
	default:
		return nil
	}
	if len(base.Meta) != len(s.resultMeta) || reflect.ValueOf(base.Meta).UnsafePointer() != reflect.ValueOf(s.resultMeta).UnsafePointer() {
		return nil
	}
	meta := base.Meta
	base.Meta = nil // _meta is the result's first member (ResultBase, embedded first): written below
	body, err := encodeJSON(r.Result)
	base.Meta = meta
	if err != nil || len(body) < 2 || body[0] != '{' {
		return nil
	}
	const head, mid = `{"jsonrpc":"` + proto.JSONRPCVersion + `","id":`, `,"result":{"_meta":`
	b := make([]byte, 0, len(head)+len(r.ID)+len(mid)+len(s.metaJSON)+1+len(body))
	b = append(append(append(append(b, head...), r.ID...), mid...), s.metaJSON...)
	if len(body) > 2 { // more members than _meta
		b = append(b, ',')
	}
	return append(append(b, body[1:]...), '}')
}

// plainID reports whether a request id's raw bytes are what encodeJSON
// writes for it: printable ASCII without space, backslash or the
// characters encoding/json escapes for HTML (<, >, &).
func plainID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	for _, c := range id {
		if c <= ' ' || c >= 0x7f || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
