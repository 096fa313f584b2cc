package frontend_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/objstore"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// TestReadStoredResult: resources/read of a stored result answers its
// task's owner with the bytes, and everyone else exactly as an unknown
// resource (also after the task expired, and on a server with no store).
func TestReadStoredResult(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		store, err := objstore.NewDir(filepath.Join(t.TempDir(), "blobs"))
		if err != nil {
			t.Fatal(err)
		}
		e := newKeyEnv(t, b, func(c *frontend.Config) { c.Blobs = store })
		ttl := time.Minute.Milliseconds()
		rec, err := e.store.Create(context.Background(), taskstate.CreateParams{Principal: "alice", Tool: "greet", TTLMs: &ttl})
		if err != nil {
			t.Fatal(err)
		}
		id := rec.Ref.ID
		gif := append([]byte("GIF89a"), bytes.Repeat([]byte{0, 0xff, 0x80}, 1000)...)
		ctx := context.Background()
		if err := store.Put(ctx, id+"/1.0", gif, "image/gif"); err != nil {
			t.Fatal(err)
		}
		if err := store.Put(ctx, id+"/1.2", []byte("héllo\n"), "text/plain; charset=utf-8"); err != nil {
			t.Fatal(err)
		}
		read := func(e *env, key, uri string) reply {
			return e.send(key, rpc(1, proto.MethodResourcesRead, metaPlain, map[string]any{"uri": uri}), nil)
		}
		rep := read(e, keyAlice, proto.BlobURI(id, "1.0"))
		mustMatch(t, rep, 200, `{"result":{"contents":[{"uri":"`+proto.BlobURI(id, "1.0")+`","mimeType":"image/gif","blob":"`+
			base64.StdEncoding.EncodeToString(gif)+`"}],"cacheScope":"private","ttlMs":60000,"resultType":"complete"}}`)
		rep = read(e, keyAlice, proto.BlobURI(id, "1.2"))
		mustMatch(t, rep, 200, `{"result":{"contents":[{"uri":"`+proto.BlobURI(id, "1.2")+
			`","mimeType":"text/plain; charset=utf-8","text":"héllo\n"}]}}`)
		notFound := func(rep reply, uri string) {
			t.Helper()
			mustMatch(t, rep, 200, `{"error":{"code":-32602,"message":"Resource not found","data":{"uri":"`+uri+`"}}}`)
		}
		other := taskstate.NewID()
		for _, tc := range []struct{ name, key, uri string }{
			{"another principal", keyBob, proto.BlobURI(id, "1.0")},
			{"unknown task", keyAlice, proto.BlobURI(other, "1.0")},
			{"unknown blob", keyAlice, proto.BlobURI(id, "1.1")},
			{"malformed name", keyAlice, "mcpq://tasks/" + id + "/blobs/x"},
			{"malformed id", keyAlice, "mcpq://tasks/..%2f..%2fetc/blobs/1.0"},
			{"path escape", keyAlice, "mcpq://tasks/" + id + "/blobs/../1.0"},
		} {
			t.Run(tc.name, func(t *testing.T) { notFound(read(e, tc.key, tc.uri), tc.uri) })
		}
		// The same answer as for a URI no worker serves.
		notFound(read(e, keyBob, "file:///nobody/serves/this"), "file:///nobody/serves/this")

		noStore := newKeyEnv(t, b, nil)
		notFound(read(noStore, keyAlice, proto.BlobURI(id, "1.0")), proto.BlobURI(id, "1.0"))

		e.clock.Advance(2 * time.Minute)
		notFound(read(e, keyAlice, proto.BlobURI(id, "1.0")), proto.BlobURI(id, "1.0"))
	})
}
