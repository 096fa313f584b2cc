package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/gif"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/internal/s3test"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// gifFrames is enough frames at 512 px for a GIF of several hundred kB,
// well over the default inline limit of 256 KiB.
const gifFrames = 30

// TestLargeResultInS3: front end and worker processes on a real
// redis-server and a real S3 server (SeaweedFS): a large render_gif
// result comes back as a resource_link with a signed URL, reads with
// resources/read for its owner only, and the task record holds no GIF.
func TestLargeResultInS3(t *testing.T) {
	t.Parallel()
	s3 := s3test.Start(t)
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		t.Parallel()
		keyAlice, keyBob := "k1-"+taskstate.NewID(), "k2-"+taskstate.NewID()
		f := &authFE{b: b, env: []string{"REDIS_URL=" + b.URL, "MCPQ_PREFIX=" + b.Prefix,
			"MCPQ_BLOB_URL=s3://mcpq-e2e/run-" + taskstate.NewID() + "?insecure=true&endpoint=" + s3.Endpoint,
			"MCPQ_BLOB_ACCESS_KEY=" + s3test.AccessKey, "MCPQ_BLOB_SECRET_KEY=" + s3test.SecretKey}}
		start(t, "worker", f.env, nil, "worker")
		port, err := redistest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		start(t, "frontend", append([]string{"MCPQ_API_KEYS=alice:" + keyAlice + ",bob:" + keyBob}, f.env...), nil,
			"frontend", "--addr", addr)
		f.base = "http://" + addr
		waitHealthy(t, f.base)
		ctx := within(t)
		id := largeGIF(t, ctx, f, keyAlice, keyBob, true)

		// What Redis keeps of the task: its record and the companion key an
		// ended record's long values go to (docs/redis.md).
		ref := taskstate.Ref{Owner: taskstate.OwnerTag("alice"), ID: id}
		keys := taskstate.Keys{Prefix: b.Prefix}
		raw, err := b.Client.HGetAll(ctx, keys.Task(ref)).Result()
		if err != nil || raw["status"] != string(proto.StatusCompleted) {
			t.Fatalf("task record: %v %v", raw, err)
		}
		total := len(b.Client.Get(ctx, keys.TaskExtra(ref)).Val())
		for k, v := range raw {
			total += len(k) + len(v)
		}
		rec, err := taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix}).Get(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if total > 16<<10 || !strings.Contains(string(rec.Result), "resource_link") || strings.Contains(string(rec.Result), "R0lGODlh") {
			t.Fatalf("task record and companion hold %d bytes; result %.300s", total, rec.Result)
		}
	})
}

// TestLargeResultInDevFolder: mcpq dev keeps large results in its
// temporary folder by default; resources/read serves them to their owner.
func TestLargeResultInDevFolder(t *testing.T) {
	t.Parallel()
	keyAlice, keyBob := "k1-"+taskstate.NewID(), "k2-"+taskstate.NewID()
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	start(t, "mcpq dev", []string{"MCPQ_API_KEYS=alice:" + keyAlice + ",bob:" + keyBob}, nil, "dev", "--addr", addr)
	f := &authFE{base: "http://" + addr}
	waitHealthy(t, f.base)
	largeGIF(t, within(t), f, keyAlice, keyBob, false)
}

// largeGIF runs a large render_gif as alice and checks what comes back: a
// small text block inline, the GIF as a resource_link (with a working
// signed URL when signed), readable by alice with resources/read and by
// bob not at all. It returns the task id.
func largeGIF(t *testing.T, ctx context.Context, f *authFE, keyAlice, keyBob string, signed bool) string {
	t.Helper()
	for { // the worker publishes its catalog on its own schedule
		a := f.post(t, ctx, keyAlice, 1, proto.MethodToolsList, "", nil)
		if a.status == 200 && bytes.Contains(a.body, []byte(`"render_gif"`)) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("catalog never listed render_gif: %d %s", a.status, a.body)
		case <-time.After(50 * time.Millisecond):
		}
	}
	id := f.create(t, ctx, keyAlice, "render_gif", map[string]any{"frames": gifFrames, "size": 512, "frameMs": 50})
	f.await(t, ctx, keyAlice, id, proto.StatusCompleted)
	a := f.task(t, ctx, keyAlice, proto.MethodTasksGet, id)
	var res struct {
		Result struct {
			Result proto.CallToolResult `json:"result"`
		} `json:"result"`
	}
	if err := json.Unmarshal(a.body, &res); err != nil || len(res.Result.Result.Content) != 2 {
		t.Fatalf("tasks/get: HTTP %d %.500s", a.status, a.body)
	}
	if len(a.body) > 8<<10 {
		t.Errorf("tasks/get is %d bytes: the GIF came inline", len(a.body))
	}
	link := res.Result.Result.Content[0]
	if link.Type != "resource_link" || link.URI != proto.BlobURI(id, "1.0") || link.MimeType != "image/gif" || link.Size == nil {
		t.Fatalf("first block: %+v", link)
	}
	if res.Result.Result.Content[1].Type != "text" {
		t.Errorf("the small text block did not stay inline: %+v", res.Result.Result.Content[1])
	}

	read := func(key, uri string) answer {
		return f.post(t, ctx, key, "r", proto.MethodResourcesRead, uri, map[string]any{"uri": uri})
	}
	a = read(keyAlice, link.URI)
	var rr struct {
		Result proto.ReadResourceResult `json:"result"`
	}
	if err := json.Unmarshal(a.body, &rr); err != nil || len(rr.Result.Contents) != 1 || rr.Result.Contents[0].Blob == nil {
		t.Fatalf("resources/read as the owner: HTTP %d %.500s", a.status, a.body)
	}
	data, err := base64.StdEncoding.DecodeString(*rr.Result.Contents[0].Blob)
	if err != nil || int64(len(data)) != *link.Size || rr.Result.Contents[0].MimeType != "image/gif" {
		t.Fatalf("read %d bytes (%v) of %q, link says %d", len(data), err, rr.Result.Contents[0].MimeType, *link.Size)
	}
	if len(data) <= 256<<10 {
		t.Fatalf("the GIF is only %d bytes: not a large result", len(data))
	}
	g, err := gif.DecodeAll(bytes.NewReader(data))
	if err != nil || len(g.Image) != gifFrames {
		t.Fatalf("the stored GIF does not decode to %d frames: %v", gifFrames, err)
	}

	// Bob gets exactly what a URI nobody serves gets.
	notFound := func(uri string) string {
		return `{"jsonrpc":"2.0","id":"r","error":{"code":-32602,"message":"Resource not found","data":{"uri":"` + uri + `"}}}`
	}
	for _, uri := range []string{link.URI, proto.BlobURI(taskstate.NewID(), "1.0")} {
		if a := read(keyBob, uri); a.status != 200 || strings.TrimSpace(string(a.body)) != notFound(uri) {
			t.Errorf("resources/read of %s as another principal: HTTP %d %s", uri, a.status, a.body)
		}
	}

	u, _ := link.Meta[proto.MetaSignedURL].(string)
	switch {
	case signed && u == "":
		t.Errorf("no signed URL in the link's _meta: %v", link.Meta)
	case signed:
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Equal(body, data) {
			t.Errorf("GET of the signed URL: HTTP %d, %d bytes", resp.StatusCode, len(body))
		}
	case link.Meta != nil:
		t.Errorf("a folder store cannot sign, yet _meta is %v", link.Meta)
	}
	return id
}
