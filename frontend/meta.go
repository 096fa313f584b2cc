package frontend

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpq/mcpq/proto"
)

// HTTP headers of the 2026-07-28 Streamable HTTP transport.
const (
	headerProtocolVersion = "MCP-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
)

func badMeta(format string, args ...any) error {
	return withStatus(proto.NewError(proto.CodeInvalidParams, format, args...), http.StatusBadRequest)
}

// routing is what the transport checks read from params, decoded once:
// the _meta and the names the Mcp-Name header must match (kept raw, so a
// wrongly typed name is the method's error, not the envelope's).
// The same pass keeps the fields tools/call and tasks/* read, so those
// methods need not decode params again when the fields have the right types.
type routing struct {
	Meta   json.RawMessage `json:"_meta"`
	Name   json.RawMessage `json:"name"`
	URI    json.RawMessage `json:"uri"`
	TaskID json.RawMessage `json:"taskId"`

	Arguments      json.RawMessage `json:"arguments"`
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   json.RawMessage `json:"requestState"`
}

// str is a raw JSON string's value ("" for anything else).
func str(raw json.RawMessage) string {
	v, _ := rawString(raw)
	return v
}

// rawString decodes a raw JSON string; ok is false for any other value.
func rawString(raw json.RawMessage) (v string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; !bytes.ContainsAny(inner, `\"`) {
		return string(inner), true // no escapes: the common case
	}
	return v, json.Unmarshal(raw, &v) == nil
}

// checkMeta decodes the required per-request _meta: -32602 (HTTP 400) when
// it or a required key is missing or malformed.
func checkMeta(params json.RawMessage) (*proto.RequestMeta, *routing, error) {
	var p routing
	if len(params) == 0 || string(params) == "null" {
		return nil, nil, badMeta("Invalid params: params._meta is required")
	}
	if err := decodeJSON(params, &p); err != nil {
		return nil, nil, badMeta("Invalid params: %v", err)
	}
	if len(p.Meta) == 0 || string(p.Meta) == "null" {
		return nil, nil, badMeta("Invalid params: params._meta is required")
	}
	var m proto.RequestMeta
	if err := decodeJSON(p.Meta, &m); err != nil {
		return nil, nil, badMeta("Invalid params: _meta: %v", err)
	}
	if m.ProtocolVersion == "" {
		return nil, nil, badMeta("Invalid params: _meta[%q] is required", proto.MetaProtocolVersion)
	}
	if m.ClientCapabilities == nil {
		return nil, nil, badMeta("Invalid params: _meta[%q] is required", proto.MetaClientCapabilities)
	}
	return &m, &p, nil
}

// checkVersion answers -32022 for a protocol version mcpq does not serve.
// It runs after the headers are checked: a header that disagrees with the
// body is a mismatch (-32020) whatever the version.
// Per-request _meta is the modern era's only: a legacy version there is
// unsupported too (the legacy era opens with initialize).
func (s *Server) checkVersion(m *proto.RequestMeta) error {
	if m.ProtocolVersion != proto.ProtocolVersion || !s.modernOn() {
		return &proto.Error{Code: proto.CodeUnsupportedProtocolVersion, Message: "Unsupported protocol version",
			Data: proto.UnsupportedVersionData{Supported: s.versions, Requested: m.ProtocolVersion}}
	}
	return nil
}

// modernOn reports whether the server serves the modern era.
func (s *Server) modernOn() bool { return slices.Contains(s.versions, proto.ProtocolVersion) }

// modernVersion reports whether params carry a modern _meta protocol
// version: such a request is the modern era's, whatever else it carries
// (the 2026-07-28 versioning text, "Backward Compatibility"; docs/eras.md).
func modernVersion(params json.RawMessage) bool {
	var p struct {
		Meta struct {
			Version *string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	_ = decodeJSON(params, &p) // params that do not decode have no modern _meta
	return p.Meta.Version != nil
}

// refuseInitialize answers an initialize (without modern _meta) on a server
// that does not serve the 2025-11-25 era: -32022 naming the versions it
// serves, as the versioning text asks of a modern-only server (a legacy
// client has no other way to tell its user why it cannot connect).
func (s *Server) refuseInitialize(c *call) error {
	var p proto.InitializeParams
	if err := decodeParams(c, &p); err != nil {
		return err
	}
	if p.ProtocolVersion == "" {
		return proto.NewError(proto.CodeInvalidParams, "Invalid params: protocolVersion is required")
	}
	return &proto.Error{Code: proto.CodeUnsupportedProtocolVersion,
		Message: "Unsupported protocol version: this server serves " + strings.Join(s.versions, ", ") + " only; initialize is not served",
		Data:    proto.UnsupportedVersionData{Supported: s.versions, Requested: p.ProtocolVersion}}
}

func headerMismatch(format string, args ...any) error {
	return proto.NewError(proto.CodeHeaderMismatch, format, args...)
}

// checkHeaders holds the routing headers to the body: MCP-Protocol-Version,
// Mcp-Method and, where the method names something, Mcp-Name.
func checkHeaders(h http.Header, req *proto.Request, meta *proto.RequestMeta, names *routing) error {
	if err := matchHeader(h, headerProtocolVersion, meta.ProtocolVersion); err != nil {
		return err
	}
	if err := matchHeader(h, headerMethod, req.Method); err != nil {
		return err
	}
	switch req.Method {
	case proto.MethodToolsCall, proto.MethodPromptsGet:
		return matchHeader(h, headerName, str(names.Name))
	case proto.MethodResourcesRead:
		return matchHeader(h, headerName, str(names.URI))
	case proto.MethodTasksGet, proto.MethodTasksUpd, proto.MethodTasksCncl:
		return matchHeader(h, headerName, str(names.TaskID))
	}
	return nil
}

// matchHeader checks that header name is present and, once decoded, equals want.
func matchHeader(h http.Header, name, want string) error {
	vals := h.Values(name)
	if len(vals) == 0 {
		return headerMismatch("Header mismatch: %s header is required", name)
	}
	if len(vals) > 1 {
		return headerMismatch("Header mismatch: %s header given %d times", name, len(vals))
	}
	got, ok := decodeHeaderValue(vals[0])
	if !ok {
		return headerMismatch("Header mismatch: %s header has an invalid =?base64?...?= value", name)
	}
	if got != want {
		return headerMismatch("Header mismatch: %s header %q does not match the body %q", name, got, want)
	}
	return nil
}

// decodeHeaderValue trims surrounding whitespace and decodes the
// =?base64?<b64 of UTF-8>?= form.
func decodeHeaderValue(v string) (string, bool) {
	v = strings.TrimSpace(v)
	const pre, post = "=?base64?", "?="
	if !strings.HasPrefix(v, pre) || !strings.HasSuffix(v, post) || len(v) < len(pre)+len(post) {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(v[len(pre) : len(v)-len(post)])
	if err != nil {
		return "", false
	}
	return string(b), true
}

// headerTag is the inputSchema keyword checkParamHeaders looks for.
const headerTag = "x-mcp-header"

// mayTagHeader reports whether schema can hold a property tagged
// headerTag: false (a schema without the tag, most tools) spares a call
// decoding the schema and the arguments. encoding/json matches the tag's
// name without regard to case (and "x-mcp-header" has no letter that
// folds from outside ASCII: only k and s do), or spelled with \u escapes;
// so a schema without a backslash and without headerTag in any case
// holds no tag.
func mayTagHeader(schema []byte) bool {
	if len(schema) == 0 {
		return false
	}
	if bytes.IndexByte(schema, '\\') >= 0 {
		return true
	}
	for i := 0; i+len(headerTag) <= len(schema); i++ {
		if asciiEqualFold(schema[i:i+len(headerTag)], headerTag) {
			return true
		}
	}
	return false
}

// asciiEqualFold reports whether b equals s, ASCII letters compared
// without regard to case.
func asciiEqualFold(b []byte, s string) bool {
	for i := range len(s) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// checkParamHeaders holds Mcp-Param-* headers to the arguments: every
// inputSchema property tagged "x-mcp-header": NAME whose argument is
// present must arrive as header Mcp-Param-NAME with the same value (plain,
// or =?base64?...?=), and no such header may come without its argument.
func checkParamHeaders(h http.Header, schema, args json.RawMessage) error {
	if !mayTagHeader(schema) {
		return nil // before sch, which escapes: no allocation for an untagged schema
	}
	var sch struct {
		Properties map[string]struct {
			Header string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &sch) != nil {
		return nil
	}
	var argv map[string]json.RawMessage
	_ = json.Unmarshal(args, &argv)
	for prop, p := range sch.Properties {
		if p.Header == "" {
			continue
		}
		name := "Mcp-Param-" + p.Header
		raw, present := argv[prop]
		if !present || string(raw) == "null" {
			if len(h.Values(name)) > 0 {
				return headerMismatch("Header mismatch: %s header given without argument %q", name, prop)
			}
			continue
		}
		want := string(raw)
		var str string
		if json.Unmarshal(raw, &str) == nil {
			want = str
		}
		if err := matchHeader(h, name, want); err != nil {
			return err
		}
	}
	return nil
}
