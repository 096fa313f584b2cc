package frontend_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/internal/s3test"
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

// recordingStore notes the key of every Put.
type recordingStore struct {
	objstore.Store
	mu   sync.Mutex
	puts []string
}

func (r *recordingStore) Put(ctx context.Context, key string, data []byte, contentType string) error {
	r.mu.Lock()
	r.puts = append(r.puts, key)
	r.mu.Unlock()
	return r.Store.Put(ctx, key, data, contentType)
}

// TestLargeArgumentsStored, on a folder store and on a real S3 server:
// arguments over InlineMaxArgumentBytes go to the object store and the task
// record holds only their key; smaller ones stay in the record and touch
// no store; the argument-byte cap counts the real size; and a create the
// caps refuse leaves no stored arguments behind.
func TestLargeArgumentsStored(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"dir", "s3"} {
		t.Run(kind, func(t *testing.T) {
			var store objstore.Store
			var err error
			if kind == "dir" {
				store, err = objstore.NewDir(filepath.Join(t.TempDir(), "blobs"))
			} else {
				srv := s3test.Start(t)
				store, err = objstore.Open(context.Background(), "s3://mcpq-fe/run-"+taskstate.NewID()+"?insecure=true&endpoint="+srv.Endpoint,
					objstore.Credentials{AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey})
			}
			if err != nil {
				t.Fatal(err)
			}
			rs := &recordingStore{Store: store}
			e := newEnv(t, redistest.Mini(t), func(c *frontend.Config) {
				c.Blobs, c.InlineMaxArgumentBytes = rs, 1024
				c.MaxLiveTasks, c.MaxArgumentBytesHeld = 3, 12_000
			})
			ctx := context.Background()
			name := strings.Repeat("é", 2500) // 5000 bytes of UTF-8
			args, _ := json.Marshal(map[string]any{"name": name})
			held := func() string {
				return e.b.Client.HGet(ctx, e.store.Keys().Live(taskstate.OwnerTag(frontend.AnonymousPrincipal)), "total").Val()
			}
			fields := func(id string) map[string]string {
				return e.b.Client.HGetAll(ctx, e.store.Keys().Task(ref(id))).Val()
			}

			rep := e.callTool(metaTasks, toolTaskJob, map[string]any{"name": name})
			mustMatch(t, rep, 200, `{"result":{"resultType":"task","taskId":"<taskid>"}}`)
			id := str(rep.JSON, "result.taskId")
			f := fields(id)
			if _, ok := f["arguments"]; ok || f["argsRef"] != objstore.ArgumentsKey(id) {
				t.Fatalf("task record %v: want argsRef %s and no arguments", f, objstore.ArgumentsKey(id))
			}
			size := 0
			for k, v := range f {
				size += len(k) + len(v)
			}
			if size > 1024 {
				t.Errorf("the task record holds %d bytes", size)
			}
			o, err := store.Get(ctx, objstore.ArgumentsKey(id))
			if err != nil || !bytes.Equal(o.Data, args) || o.ContentType != "application/json" {
				t.Fatalf("stored arguments: %q %q %v", o.Data, o.ContentType, err)
			}
			if got := held(); got != strconv.Itoa(len(args)) {
				t.Errorf("held argument bytes %q, want the real size %d", got, len(args))
			}

			mustMatch(t, e.callTool(metaTasks, toolTaskJob, map[string]any{"name": name}), 200,
				`{"result":{"resultType":"task","taskId":"<taskid>"}}`)
			// A third would hold 15 kB of arguments: over the cap, though the
			// records hold only keys.
			mustMatch(t, e.callTool(metaTasks, toolTaskJob, map[string]any{"name": name}), 429,
				`{"error":{"code":-32603,"message":"Limit reached: this principal's live tasks hold too many argument bytes; wait for some to end"}}`)

			small := e.callTool(metaTasks, toolTaskJob, map[string]any{"name": "Ada"})
			mustMatch(t, small, 200, `{"result":{"resultType":"task","taskId":"<taskid>"}}`)
			sid := str(small.JSON, "result.taskId")
			if f := fields(sid); f["arguments"] != `{"name":"Ada"}` || f["argsRef"] != "" {
				t.Errorf("small arguments: record %v", f)
			}
			// Three live tasks: the cap on live tasks refuses the next.
			mustMatch(t, e.callTool(metaTasks, toolTaskJob, map[string]any{"name": name}), 429,
				`{"error":{"code":-32603,"message":"Limit reached: too many live tasks for this principal; wait for some to end"}}`)

			rs.mu.Lock()
			puts := append([]string(nil), rs.puts...)
			rs.mu.Unlock()
			if len(puts) != 4 {
				t.Fatalf("stored %v: want the arguments of four large calls, none of the small one", puts)
			}
			for i, key := range puts {
				_, err := store.Get(ctx, key)
				if kept := i < 2; kept != (err == nil) {
					t.Errorf("stored arguments %d (%s): %v; want kept only for the two created tasks", i, key, err)
				}
			}
		})
	}
}
