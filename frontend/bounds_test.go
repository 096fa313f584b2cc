package frontend_test

import (
	"bytes"
	"context"
	"net/http"
	"runtime"
	"testing"

	"github.com/mcpq/mcpq/internal/redistest"
)

// TestManyValuesRefusedEarly: a 3.8 MB tools/call whose argument is a
// 1.9M-element array is refused with 413 on a count of its raw bytes,
// before any decode, and the request costs the body's buffer and at most
// 2 MiB more (decoding it cost 197 MiB before).
func TestManyValuesRefusedEarly(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), nil)
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + toolTaskJob + `","arguments":{"a":[1`)
	for range 1_900_000 - 1 {
		b.WriteString(",1")
	}
	b.WriteString(`]},"_meta":` + metaTasks + `}}`)
	body := b.Bytes()
	h := deriveHeaders(body)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rep := e.serve(context.Background(), http.MethodPost, body, h)
	runtime.ReadMemStats(&after)
	mustMatch(t, rep, http.StatusRequestEntityTooLarge, `{"id":null,"error":{"code":-32600,"message":"Request body holds more than 1048576 JSON values"}}`)
	if cost, bound := after.TotalAlloc-before.TotalAlloc, uint64(len(body))+2<<20; cost > bound {
		t.Errorf("refusing a %d-byte body allocated %d bytes, more than %d", len(body), cost, bound)
	}
	// Under the count, the arguments' size limit still answers.
	small := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + toolTaskJob +
		`","arguments":{"a":[1,2,3]},"_meta":` + metaTasks + `}}`)
	mustMatch(t, e.serve(context.Background(), http.MethodPost, small, deriveHeaders(small)), 200, `{"id":2,"result":{"resultType":"task"}}`)
}
