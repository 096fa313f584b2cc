package worker_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpq/mcpq/objstore"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
	"github.com/mcpq/mcpq/worker/command"
)

// TestCommandOutputFilesStreamToTheStore: a command tool's output file
// over the inline limit, even over command.MaxResultBytes, goes from disk
// to the object store and is a resource_link; small files stay inline.
func TestCommandOutputFilesStreamToTheStore(t *testing.T) {
	const big = command.MaxResultBytes + 4<<20
	got, taskID, store := runWithStore(t, command.Spec{Name: "encode", Grace: time.Second, Command: []string{"sh", "-c",
		`head -c ` + itoa(big) + ` /dev/zero > "$MCPQ_OUTPUT/video.mp4" && printf 'encoded' > "$MCPQ_OUTPUT/summary.txt"`}})
	if len(got.Content) != 2 || got.Content[0].Text != "encoded" {
		t.Fatalf("content %+v", got.Content)
	}
	l := got.Content[1]
	id, name, ok := proto.ParseBlobURI(l.URI)
	if l.Type != "resource_link" || !ok || id != taskID || l.MimeType != "video/mp4" || l.Name != "video.mp4" ||
		l.Size == nil || *l.Size != big {
		t.Fatalf("video block %+v", l)
	}
	o, err := store.Get(context.Background(), id+"/"+name)
	if err != nil || len(o.Data) != big || o.ContentType != "video/mp4" {
		t.Fatalf("stored %d bytes of %q (%v), want %d of video/mp4", len(o.Data), o.ContentType, err, big)
	}
}

// runWithStore runs spec's command tool once on a worker with a folder
// store (inline limit 64 KiB) and returns the result, the task id and
// the store.
func runWithStore(t *testing.T, spec command.Spec) (proto.CallToolResult, string, *objstore.Dir) {
	t.Helper()
	h := mini(t)
	store, err := objstore.NewDir(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	tool, err := command.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg := h.config()
	cfg.Blobs = worker.BlobConfig{Store: store, InlineMaxBytes: 64 << 10}
	h.start(t, cfg, tool)
	tk := h.submit(t, spec.Name, `{}`)
	rec := h.terminal(t, tk)
	var got proto.CallToolResult
	if err := json.Unmarshal(rec.Result, &got); err != nil || rec.Status != proto.StatusCompleted || got.IsError {
		t.Fatalf("status %s, result %s (%v)", rec.Status, rec.Result, err)
	}
	return got, tk.ref.ID, store
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestCommandLinksGoToTheStore: output files a tool's Links name go to the
// object store as resource_links however small; the others stay inline.
func TestCommandLinksGoToTheStore(t *testing.T) {
	got, _, _ := runWithStore(t, command.Spec{Name: "thumbs", Grace: time.Second, Links: []string{"thumb*.jpg", "media/*.mp4"},
		Command: []string{"sh", "-c", `mkdir "$MCPQ_OUTPUT/media" && printf v > "$MCPQ_OUTPUT/media/video.mp4" &&
			printf t > "$MCPQ_OUTPUT/thumb01.jpg" && printf s > "$MCPQ_OUTPUT/summary.txt" && printf o > "$MCPQ_OUTPUT/other.mp4"`}})
	if len(got.Content) != 4 {
		t.Fatalf("content %+v", got.Content)
	}
	// In path order: media/video.mp4, other.mp4, summary.txt, thumb01.jpg.
	for i, want := range []string{"resource_link", "resource", "text", "resource_link"} {
		if c := got.Content[i]; c.Type != want {
			t.Errorf("block %d (%s): type %s, want %s", i, c.Name, c.Type, want)
		}
	}
	if l := got.Content[3]; l.Name != "thumb01.jpg" || l.MimeType != "image/jpeg" || l.Size == nil || *l.Size != 1 {
		t.Errorf("thumbnail link %+v", l)
	}
}
