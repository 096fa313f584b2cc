package frontend

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestParamHeadersTagSpellings: the quick test that spares untagged
// schemas their decode (mayTagHeader) misses no spelling of the tag that
// encoding/json accepts, so a tagged argument without its header is refused
// whichever way the schema spells "x-mcp-header".
func TestParamHeadersTagSpellings(t *testing.T) {
	args := json.RawMessage(`{"region":"eu"}`)
	for _, schema := range []string{
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`,
		`{"type":"object","properties":{"region":{"type":"string","X-MCP-Header":"Region"}}}`,
		`{"type":"object","properties":{"region":{"type":"string","\u0078-mcp-header":"Region"}}}`,
	} {
		if !mayTagHeader([]byte(schema)) {
			t.Errorf("mayTagHeader(%s) = false", schema)
		}
		if err := checkParamHeaders(http.Header{}, json.RawMessage(schema), args); err == nil {
			t.Errorf("schema %s: argument without its Mcp-Param-Region header accepted", schema)
		}
		h := http.Header{}
		h.Set("Mcp-Param-Region", "eu")
		if err := checkParamHeaders(h, json.RawMessage(schema), args); err != nil {
			t.Errorf("schema %s, header given: %v", schema, err)
		}
	}
	for _, schema := range []string{``, `{"type":"object"}`, `{"properties":{"x-mcp-head":{}}}`} {
		if mayTagHeader([]byte(schema)) {
			t.Errorf("mayTagHeader(%s) = true", schema)
		}
	}
	// An untagged schema still refuses nothing and needs no header.
	if err := checkParamHeaders(http.Header{}, json.RawMessage(`{"type":"object"}`), args); err != nil {
		t.Errorf("untagged schema: %v", err)
	}
}
