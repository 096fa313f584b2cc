package frontend

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpq/mcpq/proto"
)

// decodeJSON and encodeJSON must read and write exactly what encoding/json
// does: the swap is for speed only.
func FuzzDecodeParity(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`,
		`{"jsonrpc":"2.0","id":"a","id":2,"METHOD":"x","params":{"name":"\u00e9\ud800","arguments":{"a":[1,2,{"b":null}]},"requestState":null}}`,
		`{"jsonrpc":2}`, `{"params":[1]}`, `{"id":{}}`, "{\"method\":\"\xff\xfe\"}", `{} {}`, `{"a":`, `[]`, `null`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","x":{"a":1,"\u0061":2},"name":null}}`,
		`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"a":1,"a":{}}},"progressToken":1.5e3}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want, got proto.Request
		werr, gerr := json.Unmarshal(b, &want), decodeJSON(b, &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: encoding/json err %v, decodeJSON err %v", b, werr, gerr)
		}
		if _, ok := werr.(*json.SyntaxError); ok != isSyntaxError(gerr) {
			t.Fatalf("%q: syntax error %v vs %v", b, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%q: encoding/json %+v, decodeJSON %+v", b, want, got)
		}
		// The envelope decode reads what decodeJSON reads, or refuses a
		// body whose only fault is a duplicate member name.
		var env proto.Request
		switch eerr := decodeEnvelope(b, &env); {
		case eerr == nil:
			if gerr != nil || !reflect.DeepEqual(env, got) {
				t.Fatalf("%q: envelope %+v, decodeJSON %+v %v", b, env, got, gerr)
			}
		case !isSyntaxError(eerr):
			if gerr == nil {
				t.Fatalf("%q: envelope err %v, decodeJSON none", b, eerr)
			}
		case json.Valid(b) && !hasDuplicateName(b):
			t.Fatalf("%q: envelope syntax error %v on valid JSON without duplicate names", b, eerr)
		}
		var wr, gr routing
		werr, gerr = json.Unmarshal(b, &wr), decodeJSON(b, &gr)
		if (werr == nil) != (gerr == nil) || (werr == nil && !reflect.DeepEqual(wr, gr)) {
			t.Fatalf("%q: routing %+v %v vs %+v %v", b, wr, werr, gr, gerr)
		}
		var wm, gm proto.RequestMeta
		werr, gerr = json.Unmarshal(b, &wm), decodeJSON(b, &gm)
		if (werr == nil) != (gerr == nil) || (werr == nil && !reflect.DeepEqual(wm, gm)) {
			t.Fatalf("%q: meta %+v %v vs %+v %v", b, wm, werr, gm, gerr)
		}
		if werr == nil {
			resp := proto.Response{JSONRPC: proto.JSONRPCVersion, ID: want.ID, Result: wm}
			we, wErr := json.Marshal(resp)
			ge, gErr := encodeJSON(resp)
			if (wErr == nil) != (gErr == nil) || string(we) != string(ge) {
				t.Fatalf("%q: encode %s %v vs %s %v", b, we, wErr, ge, gErr)
			}
		}
	})
}

// hasDuplicateName reports whether valid JSON b has an object with two
// members of one name, read with encoding/json's token stream (names are
// compared after unescaping, as the decoder compares them).
func hasDuplicateName(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		obj   bool
		names map[string]bool
		key   bool // the next string token in this object is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &frame{obj: true, names: map[string]bool{}, key: true})
			case '[':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.obj && top.key {
				if top.names[v] {
					return true
				}
				top.names[v] = true
				top.key = false
				continue
			}
		}
		if top != nil && top.obj {
			top.key = true
		}
	}
}
