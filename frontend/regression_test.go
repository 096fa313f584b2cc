package frontend_test

// Regression tests of bugs found while writing these tests (both fixed:
// withMeta on odd stored results, and the catalog index of non-tool kinds).

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// TestStoredResultShapes: the plain answer of a finished call is the
// stored result plus serverInfo, whatever a worker stored.
//
// Was a bug: Server.withMeta in
// frontend/http.go panics with "assignment to entry in nil map" when the
// stored result is JSON null (rawResult is a nil map) or has "_meta": null
// (json.Unmarshal of null sets the meta map to nil). net/http recovers the
// panic and drops the connection, so the client gets no answer at all.
// It also leaves resultType unset when the stored result has none, though
// every 2026-07-28 result must carry it.
func TestStoredResultShapes(t *testing.T) {
	const si = `"_meta":{"io.modelcontextprotocol/serverInfo":"<object>"}`
	tests := []struct{ name, stored, want string }{
		{"meta null", `{"resultType":"complete","content":[],"_meta":null}`, `{"resultType":"complete","content":[],` + si + `}`},
		{"result null", `null`, `{"resultType":"complete",` + si + `}`},
		{"no resultType", `{"content":[{"type":"text","text":"x"}]}`, `{"resultType":"complete","content":[{"text":"x"}],` + si + `}`},
		{"foreign meta kept", `{"resultType":"complete","content":[],"_meta":{"k":1}}`,
			`{"resultType":"complete","_meta":{"k":1,"io.modelcontextprotocol/serverInfo":"<object>"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, redistest.Mini(t), nil)
			e.enq.setHold(true)
			ts := httptest.NewServer(e.h) // net/http turns a handler panic into a dropped connection
			defer ts.Close()
			body := rpc(1, proto.MethodToolsCall, metaPlain, map[string]any{"name": toolGreet})
			type answer struct {
				rep reply
				err error
			}
			res := make(chan answer, 1)
			go func() {
				req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
				req.Header = deriveHeaders([]byte(body))
				r, err := ts.Client().Do(req)
				if err != nil {
					res <- answer{err: err}
					return
				}
				defer r.Body.Close()
				b, _ := io.ReadAll(r.Body)
				a := answer{rep: reply{Status: r.StatusCode, Header: r.Header, Body: b}}
				a.err = json.Unmarshal(b, &a.rep.JSON)
				res <- a
			}()
			j := e.enq.nextJob(t)
			c, err := e.store.Claim(context.Background(), j.Ref, j.Seq, taskstate.Share{})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.store.Finish(context.Background(), j.Ref, c.Attempt, taskstate.Outcome{
				Status: proto.StatusCompleted, Result: json.RawMessage(tt.stored)}); err != nil {
				t.Fatal(err)
			}
			var a answer
			select {
			case a = <-res:
			case <-time.After(waitBound):
				t.Fatal("no answer")
			}
			if a.err != nil {
				t.Fatalf("stored result %s: no usable answer: %v", tt.stored, a.err)
			}
			// Re-decode with numbers as json.Number for the matcher.
			a.rep.JSON = nil
			dec := json.NewDecoder(bytes.NewReader(a.rep.Body))
			dec.UseNumber()
			_ = dec.Decode(&a.rep.JSON)
			mustMatch(t, a.rep, 200, `{"id":1,"result":`+tt.want+`}`)
		})
	}
}

// TestCatalogKinds: prompts and resources a worker publishes can be got
// and read.
//
// Was a bug: catalog.reloadLocked (frontend/catalog.go) indexes every entry
// by catalog.Entry.Tool.Name, while getPrompt, readResource, complete and
// updateTask look entries up by catalog.EntryKey ("prompt:<name>",
// "resource:<uri>", "completion:", or a task's Tool, which is def.Key()).
// Non-tool entries have an empty Tool.Name, so they all collide under ""
// and none is ever found: prompts/get answers "Unknown prompt", a static
// resource "Resource not found", completion/complete always an empty list,
// and tasks/update that resumes a prompt's task -32603 "no longer served".
func TestCatalogKinds(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), func(c *frontend.Config) { c.SyncWaitLimit = 50 * time.Millisecond })
	e.publish(
		catalog.Entry{Kind: catalog.KindPrompt, Prompt: &proto.Prompt{Name: "hello"}, Queue: "mcpq"},
		catalog.Entry{Kind: catalog.KindResource, Resource: &proto.Resource{URI: "file:///a", Name: "a"}, Queue: "mcpq"},
	)
	for _, body := range []string{
		rpc(1, proto.MethodPromptsGet, metaPlain, map[string]any{"name": "hello"}),
		rpc(2, proto.MethodResourcesRead, metaPlain, map[string]any{"uri": "file:///a"}),
	} {
		rep := e.post(body)
		if msg := str(rep.JSON, "error.message"); strings.Contains(msg, "Unknown") || strings.Contains(msg, "not found") {
			t.Errorf("%s: %s", body, rep.Body)
		}
	}
}
