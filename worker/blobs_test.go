package worker_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
// blocks with its record.
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
	skew.Store(int64(2 * time.Hour))
	eventually(t, "the reaper removes the task and its stored blocks", func() bool {
		_, gerr := h.store.Get(context.Background(), rec.Ref)
		_, oerr := store.Get(context.Background(), rec.Ref.ID+"/1.0")
		return errors.Is(gerr, taskstate.ErrNotFound) && errors.Is(oerr, objstore.ErrNotFound)
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
