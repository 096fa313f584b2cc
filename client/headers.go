package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// EncodeHeaderValue is v as an HTTP header value of the protocol: plain when
// it is printable ASCII without surrounding whitespace and does not look
// like the encoded form, else "=?base64?<base64 of its UTF-8>?=".
func EncodeHeaderValue(v string) string {
	plain := v == strings.TrimSpace(v) && !(strings.HasPrefix(v, "=?") && strings.HasSuffix(v, "?="))
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] >= 0x20 && v[i] <= 0x7e
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// headerValue is the Mcp-Param-* value of one argument: strings encoded as
// EncodeHeaderValue says, integers and booleans as their JSON text; ok is
// false for an absent or null argument (the header is then omitted).
func headerValue(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return EncodeHeaderValue(s), true
	}
	return string(raw), true
}

// ToolHeaders reads the x-mcp-header annotations of a tool's inputSchema:
// argument name -> header name (sent as Mcp-Param-<name>). An error means
// the tool must not be used: an annotation that is empty, not a token of
// printable ASCII, repeated (case-insensitively), or on a property that is
// not a string, integer or boolean.
func ToolHeaders(schema json.RawMessage) (map[string]string, error) {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil, nil
	}
	out := map[string]string{}
	seen := map[string]string{}
	for arg, raw := range s.Properties {
		var p struct {
			Type   json.RawMessage  `json:"type"`
			Header *json.RawMessage `json:"x-mcp-header"`
		}
		if json.Unmarshal(raw, &p) != nil || p.Header == nil {
			continue
		}
		var name string
		if json.Unmarshal(*p.Header, &name) != nil {
			return nil, fmt.Errorf("x-mcp-header of %q is not a string", arg)
		}
		if !token(name) {
			return nil, fmt.Errorf("x-mcp-header %q of %q is not a header name", name, arg)
		}
		var typ string
		_ = json.Unmarshal(p.Type, &typ)
		if typ != "string" && typ != "integer" && typ != "boolean" {
			return nil, fmt.Errorf("x-mcp-header on %q of type %s (string, integer or boolean only)", arg, p.Type)
		}
		if other, dup := seen[strings.ToLower(name)]; dup {
			return nil, fmt.Errorf("x-mcp-header %q on both %q and %q", name, other, arg)
		}
		seen[strings.ToLower(name)] = arg
		out[arg] = name
	}
	return out, nil
}

// token reports whether s is a non-empty HTTP token (RFC 9110 tchar).
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		ok := ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || strings.IndexByte("!#$%&'*+-.^_`|~", ch) >= 0
		if !ok {
			return false
		}
	}
	return true
}
