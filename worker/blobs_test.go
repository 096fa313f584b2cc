package worker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/s3test"
	"github.com/mcpq/mcpq/objstore"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// TestLargeResultsGoToTheStore: blocks over InlineMaxBytes leave the task
// record for the object store as resource_links; smaller ones stay inline.
func TestLargeResultsGoToTheStore(t *testing.T) {
	h := mini(t)
	store, err := objstore.NewDir(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	img := bytes.Repeat([]byte("GIF89a-frame-"), 10_000) // 130 kB, 173 kB as base64
	text := strings.Repeat("a long report line\n", 5000)
	res := json.RawMessage(`{"uri":"file:///report.csv","mimeType":"text/csv","text":` + mustJSON(t, text) + `}`)
	cfg := h.config()
	cfg.Blobs = worker.BlobConfig{Store: store, InlineMaxBytes: 64 << 10}
	h.start(t, cfg, h.tool("big", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
		return &proto.CallToolResult{Content: []proto.Content{
			{Type: "image", MimeType: "image/gif", Data: base64.StdEncoding.EncodeToString(img)},
			proto.TextContent("small stays inline"),
			proto.TextContent(text),
			{Type: "resource", Resource: res},
		}}, nil
	}))
	tk := h.submit(t, "big", `{}`)
	rec := h.terminal(t, tk)
	if rec.Status != proto.StatusCompleted {
		t.Fatalf("status %s: %+v", rec.Status, rec.Error)
	}
	if len(rec.Result) > 4096 {
		t.Fatalf("the task record holds a %d-byte result", len(rec.Result))
	}
	var got proto.CallToolResult
	if err := json.Unmarshal(rec.Result, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Content) != 4 || got.Content[1].Type != "text" || got.Content[1].Text != "small stays inline" {
		t.Fatalf("content: %+v", got.Content)
	}
	want := []struct {
		data []byte
		mime string
		name string
	}{
		{img, "image/gif", "image.gif"},
		{nil, "", ""},
		{[]byte(text), "text/plain; charset=utf-8", "text.txt"},
		{[]byte(text), "text/csv", "file:///report.csv"},
	}
	for i, w := range want {
		if w.data == nil {
			continue
		}
		l := got.Content[i]
		id, name, ok := proto.ParseBlobURI(l.URI)
		if l.Type != "resource_link" || !ok || id != tk.ref.ID || name != "1."+string(rune('0'+i)) {
			t.Fatalf("block %d: %+v, want a resource_link to mcpq://tasks/%s/blobs/1.%d", i, l, tk.ref.ID, i)
		}
		if l.MimeType != w.mime || l.Name != w.name || l.Size == nil || *l.Size != int64(len(w.data)) {
			t.Errorf("block %d: mime %q name %q size %v; want %q %q %d", i, l.MimeType, l.Name, l.Size, w.mime, w.name, len(w.data))
		}
		if l.Meta != nil {
			t.Errorf("block %d: a folder store cannot sign, yet _meta is %v", i, l.Meta)
		}
		o, err := store.Get(context.Background(), tk.ref.ID+"/"+name)
		if err != nil || !bytes.Equal(o.Data, w.data) || o.ContentType != w.mime {
			t.Errorf("block %d stored as %d bytes of %q (%v)", i, len(o.Data), o.ContentType, err)
		}
	}
}

// TestStoreRefusalFailsTheTask: a block too large for the record that the
// store refuses fails the task with a precise error rather than writing
// it to Redis.
func TestStoreRefusalFailsTheTask(t *testing.T) {
	h := mini(t)
	cfg := h.config()
	cfg.Blobs = worker.BlobConfig{Store: refusingStore{}, InlineMaxBytes: 1024}
	h.start(t, cfg, h.tool("big", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
		return worker.TextResult(strings.Repeat("x", 2048)), nil
	}))
	rec := h.terminal(t, h.submit(t, "big", `{}`))
	if rec.Status != proto.StatusFailed || rec.Error == nil ||
		!strings.Contains(rec.Error.Message, "too large for the task record and the object store refused it: disk full") {
		t.Fatalf("status %s error %+v", rec.Status, rec.Error)
	}
	if len(rec.Result) != 0 {
		t.Errorf("result written: %d bytes", len(rec.Result))
	}
}

type refusingStore struct{ objstore.Store }

func (refusingStore) Put(context.Context, string, []byte, string) error {
	return errors.New("disk full")
}

// TestExpiredTaskLosesItsBlobs: the reaper removes an expired task's stored
// blocks and arguments with its record.
func TestExpiredTaskLosesItsBlobs(t *testing.T) {
	h := mini(t)
	store, err := objstore.NewDir(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	// The worker's clock jumps past the deadline once the task completed,
	// so the reaper (which reads that clock) expires it then, not before.
	var skew atomic.Int64
	cfg := h.config()
	cfg.Clock = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	cfg.ReapInterval = 20 * time.Millisecond
	cfg.Blobs = worker.BlobConfig{Store: store, InlineMaxBytes: 1024}
	h.start(t, cfg, h.tool("big", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
		return worker.TextResult(strings.Repeat("x", 2048)), nil
	}))
	ttl := time.Hour.Milliseconds()
	rec, err := h.store.Create(context.Background(), taskstate.CreateParams{Principal: "alice", Tool: "big",
		Arguments: json.RawMessage(`{}`), PollIntervalMs: 100, TTLMs: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := h.hub.Subscribe(context.Background(), h.store.Keys().Events(rec.Ref))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	tk := task{ref: rec.Ref, sub: sub}
	h.enqueue(t, tk, "big", "")
	if got := h.terminal(t, tk); got.Status != proto.StatusCompleted {
		t.Fatalf("status %s", got.Status)
	}
	if _, err := store.Get(context.Background(), rec.Ref.ID+"/1.0"); err != nil {
		t.Fatalf("block not stored: %v", err)
	}
	// A task that never ran keeps its stored arguments until it expires.
	queued := taskstate.NewID()
	args := []byte(`{"n":1}`)
	if err := store.Put(context.Background(), objstore.ArgumentsKey(queued), args, "application/json"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Create(context.Background(), taskstate.CreateParams{ID: queued, Principal: "alice", Tool: "big",
		Arguments: args, ArgumentsRef: objstore.ArgumentsKey(queued), TTLMs: &ttl}); err != nil {
		t.Fatal(err)
	}
	skew.Store(int64(2 * time.Hour))
	eventually(t, "the reaper removes the tasks, their stored blocks and arguments", func() bool {
		_, gerr := h.store.Get(context.Background(), rec.Ref)
		_, oerr := store.Get(context.Background(), rec.Ref.ID+"/1.0")
		_, aerr := store.Get(context.Background(), objstore.ArgumentsKey(queued))
		return errors.Is(gerr, taskstate.ErrNotFound) && errors.Is(oerr, objstore.ErrNotFound) && errors.Is(aerr, objstore.ErrNotFound)
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stores runs fn on a folder store and on a real S3 server (SeaweedFS;
// skipped without its binary unless MCPQ_REQUIRE_S3=1, as s3test says).
func stores(t *testing.T, fn func(t *testing.T, store objstore.Store)) {
	t.Run("dir", func(t *testing.T) {
		store, err := objstore.NewDir(filepath.Join(t.TempDir(), "blobs"))
		if err != nil {
			t.Fatal(err)
		}
		fn(t, store)
	})
	t.Run("s3", func(t *testing.T) {
		srv := s3test.Start(t)
		store, err := objstore.Open(context.Background(), "s3://mcpq-worker/run-"+taskstate.NewID()+"?insecure=true&endpoint="+srv.Endpoint,
			objstore.Credentials{AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey})
		if err != nil {
			t.Fatal(err)
		}
		fn(t, store)
	})
}

// createStored writes a task record whose arguments are in store, as the
// front end does for arguments over its inline limit.
func (h *harness) createStored(t *testing.T, store objstore.Store, tool string, args []byte) task {
	t.Helper()
	ctx := context.Background()
	id := taskstate.NewID()
	if store != nil {
		if err := store.Put(ctx, objstore.ArgumentsKey(id), args, "application/json"); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := h.store.Create(ctx, taskstate.CreateParams{ID: id, Principal: "alice", Tool: tool,
		Arguments: args, ArgumentsRef: objstore.ArgumentsKey(id), PollIntervalMs: 100})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := h.hub.Subscribe(ctx, h.store.Keys().Events(rec.Ref))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return task{ref: rec.Ref, sub: sub}
}

type digestIn struct {
	Items []string `json:"items"`
}

type digestOut struct {
	Count int    `json:"count"`
	Bytes int    `json:"bytes"`
	Last  string `json:"last"`
}

// TestLargeArgumentsFromTheStore: a task whose record holds only the key
// of its arguments runs its handler (a Go tool and a typed tool) with the
// whole arguments; the stored arguments are deleted once the task ends,
// also when it was cancelled before it ran. Gone arguments, or a worker
// without a store, fail the task with the reason.
func TestLargeArgumentsFromTheStore(t *testing.T) {
	stores(t, func(t *testing.T, store objstore.Store) {
		h := mini(t)
		cfg := h.config()
		cfg.Concurrency = 1 // barrier() below
		cfg.Blobs = worker.BlobConfig{Store: store}
		raw := h.tool("raw", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			return worker.TextResult(fmt.Sprintf("%d bytes, sha256 %x", len(c.Arguments), sha256.Sum256(c.Arguments))), nil
		})
		typed := worker.NewTool("typed", "Digests items.", func(ctx context.Context, c *worker.Call, in digestIn) (digestOut, error) {
			n := 0
			for _, s := range in.Items {
				n += len(s)
			}
			return digestOut{Count: len(in.Items), Bytes: n, Last: in.Items[len(in.Items)-1]}, nil
		})
		typed.Queue = h.queue
		h.start(t, cfg, raw, typed)

		items := make([]string, 300)
		for i := range items {
			items[i] = fmt.Sprintf("%04d-%s", i, strings.Repeat("z", 1000))
		}
		args, _ := json.Marshal(digestIn{Items: items}) // about 300 kB
		ctx := context.Background()
		stored := func(id string) error {
			_, err := store.Get(ctx, objstore.ArgumentsKey(id))
			return err
		}

		tk := h.createStored(t, store, "raw", args)
		h.enqueue(t, tk, "raw", "")
		rec := h.terminal(t, tk)
		want := fmt.Sprintf("%d bytes, sha256 %x", len(args), sha256.Sum256(args))
		if rec.Status != proto.StatusCompleted || !strings.Contains(string(rec.Result), want) {
			t.Fatalf("raw: %s %s %+v, want %q", rec.Status, rec.Result, rec.Error, want)
		}
		h.barrier(t) // the delivery went past its outcome
		if err := stored(tk.ref.ID); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("the ended task's arguments are still stored: %v", err)
		}

		tk = h.createStored(t, store, "typed", args)
		h.enqueue(t, tk, "typed", "")
		rec = h.terminal(t, tk)
		var got struct {
			Structured digestOut `json:"structuredContent"`
		}
		if err := json.Unmarshal(rec.Result, &got); err != nil || rec.Status != proto.StatusCompleted ||
			got.Structured != (digestOut{Count: 300, Bytes: 300 * 1005, Last: items[299]}) {
			t.Fatalf("typed: %s %.300s %+v", rec.Status, rec.Result, rec.Error)
		}
		h.barrier(t) // the delivery went past its outcome
		if err := stored(tk.ref.ID); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("the ended task's arguments are still stored: %v", err)
		}

		// Cancelled while queued: its job's delivery deletes the arguments.
		tk = h.createStored(t, store, "raw", args)
		if err := h.store.RequestCancel(ctx, tk.ref); err != nil {
			t.Fatal(err)
		}
		h.enqueue(t, tk, "raw", "")
		h.barrier(t)
		if err := stored(tk.ref.ID); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("a task cancelled before it ran kept its stored arguments: %v", err)
		}

		tk = h.createStored(t, nil, "raw", args) // the record names arguments nobody stored
		h.enqueue(t, tk, "raw", "")
		if rec := h.terminal(t, tk); rec.Status != proto.StatusFailed || rec.Error == nil ||
			rec.Error.Message != "Internal error: the task's arguments are no longer in the object store" {
			t.Fatalf("missing arguments: %s %+v", rec.Status, rec.Error)
		}
	})
	t.Run("worker without a store", func(t *testing.T) {
		h := mini(t)
		h.start(t, h.config(), h.tool("raw", func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			return worker.TextResult("ran"), nil
		}))
		tk := h.createStored(t, nil, "raw", []byte(`{"a":1}`))
		h.enqueue(t, tk, "raw", "")
		if rec := h.terminal(t, tk); rec.Status != proto.StatusFailed || rec.Error == nil ||
			!strings.Contains(rec.Error.Message, "this worker has none (front ends and workers need the same --blob-url)") {
			t.Fatalf("%s %+v", rec.Status, rec.Error)
		}
	})
}
