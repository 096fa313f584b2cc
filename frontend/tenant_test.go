package frontend_test

// Issue 13 (no tenant can hurt another), front-end side: bounded work per
// request, duplicate member names, what a listing and a listen read, and
// the lower findings. Each test fails on the code before its fix.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
)

// TestTenantDuplicateNames: a body with a duplicate member name anywhere
// is refused before anything reads it, so the header check and the method
// cannot read different values of one member (finding 4).
func TestTenantDuplicateNames(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newKeyEnv(t, b, nil)
		const dup = `{"error":{"code":-32600,"message":"Invalid Request: duplicate member name in an object"}}`
		noName := func(h http.Header) { h.Del("Mcp-Name") }
		// The probe: the header check read "name": null (no Mcp-Name
		// needed), the call read "greet".
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"x"},"_meta":` +
			metaPlain + `,"name":null}}`
		mustMatch(t, e.send(keyAlice, body, noName), 400, dup)
		// A duplicate deep inside the arguments, in _meta, and in the envelope.
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"x","name":"y"},"_meta":` + metaPlain + `}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"a":[{"b":{"c":1,"c":2}}]},"_meta":` + metaPlain + `}}`,
			`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":` + strings.Replace(metaPlain, `{}}`, `{},"io.modelcontextprotocol/clientCapabilities":{"x":1}}`, 1) + `}}`,
			`{"jsonrpc":"2.0","id":1,"id":2,"method":"server/discover","params":{"_meta":` + metaPlain + `}}`,
			`{"jsonrpc":"2.0","method":"tools/call","method":"server/discover","id":1,"params":{"_meta":` + metaPlain + `}}`,
		} {
			mustMatch(t, e.send(keyAlice, body, nil), 400, dup)
		}
		// The same names in different objects are fine.
		mustMatch(t, e.send(keyAlice, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"x","o":{"name":"y"}},"_meta":`+
			metaPlain+`}}`, nil), 200, `{"result":{"content":[{"text":"Hello, x!"}]}}`)
	})
}

// TestTenantUpdateBounded: tasks/update takes at most
// frontend.MaxInputResponses answers, each key at most
// frontend.MaxInputKeyBytes; past that it is -32602 naming the limit,
// whatever the task id, before any Redis command (finding 1).
func TestTenantUpdateBounded(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newKeyEnv(t, b, nil)
		update := func(id string, n int, keyLen int) reply {
			var sb strings.Builder
			sb.WriteString(`{`)
			for i := range n {
				if i > 0 {
					sb.WriteString(",")
				}
				k := fmt.Sprintf("k%d", i)
				if keyLen > len(k) {
					k += strings.Repeat("x", keyLen-len(k))
				}
				fmt.Fprintf(&sb, `%q:{"action":"accept"}`, k)
			}
			sb.WriteString(`}`)
			body := `{"jsonrpc":"2.0","id":"u","method":"tasks/update","params":{"taskId":"` + id +
				`","inputResponses":` + sb.String() + `,"_meta":` + metaTasks + `}}`
			return e.send(keyAlice, body, nil)
		}
		tooMany := fmt.Sprintf(`{"id":"u","error":{"<exact>":true,"code":-32602,"message":"Invalid params: inputResponses has more than %d entries (the limit per request)"}}`,
			frontend.MaxInputResponses)
		unknown := "AAAAAAAAAAAAAAAAAAAAAA"
		mustMatch(t, update(unknown, frontend.MaxInputResponses+1, 0), 200, tooMany)
		mustMatch(t, update(unknown, 50_000, 0), 200, tooMany)
		mustMatch(t, update(unknown, frontend.MaxInputResponses, 0), 200, taskNotFound)
		mustMatch(t, update(unknown, 1, frontend.MaxInputKeyBytes+1), 200,
			fmt.Sprintf(`{"error":{"code":-32602,"message":"Invalid params: an inputResponses key is longer than %d bytes"}}`, frontend.MaxInputKeyBytes))

		// A real task waiting for input takes a full update.
		id := e.createAs(keyAlice, toolTaskJob)
		aref := owned("alice", id)
		e.park(aref, e.enq.nextJob(t).Attempt, "k0", "k1")
		before := e.record(aref)
		mustMatch(t, update(id, frontend.MaxInputResponses+1, 0), 200, tooMany)
		if after := e.record(aref); fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("a refused update changed the task")
		}
		mustMatch(t, update(id, frontend.MaxInputResponses, 0), 200, `{"result":{"resultType":"complete"}}`)
		e.enq.nextJob(t) // both answered: resumed
	})
}
