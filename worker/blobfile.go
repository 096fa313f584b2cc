package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mcpq/mcpq/objstore"
	"github.com/mcpq/mcpq/proto"
)

// InlineMaxBytes is the largest content block (its JSON) this worker keeps
// in a task record, and ok is false when it has no object store that
// stores from a stream (then every result stays inline).
func (c *Call) InlineMaxBytes() (n int, ok bool) {
	bc := c.worker.cfg.Blobs
	if _, stream := bc.Store.(objstore.Streamer); !stream {
		return 0, false
	}
	return bc.InlineMaxBytes, true
}

// StoreFile streams the file at path to the object store, without holding
// it in memory, as content block index of the result, and returns the
// resource_link that stands for it (named name, of media type mime), as
// for a large block of a returned result (docs/tools.md, "Large
// results"). It fails when the worker has no streaming store
// (InlineMaxBytes tells beforehand).
func (c *Call) StoreFile(ctx context.Context, index int, path, name, mime string) (proto.Content, error) {
	st, ok := c.worker.cfg.Blobs.Store.(objstore.Streamer)
	if !ok {
		return proto.Content{}, fmt.Errorf("worker: no object store to keep %s in", filepath.Base(path))
	}
	f, err := os.Open(path)
	if err != nil {
		return proto.Content{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return proto.Content{}, err
	}
	size := fi.Size()
	blob := strconv.FormatInt(c.Attempt, 10) + "." + strconv.Itoa(index)
	key := blobKey(c.TaskID, blob)
	if err := st.PutStream(ctx, key, f, size, mime); err != nil {
		return proto.Content{}, fmt.Errorf("the object store refused %s (%d bytes): %w", name, size, err)
	}
	link := proto.Content{Type: "resource_link", URI: proto.BlobURI(c.TaskID, blob), Name: name, MimeType: mime, Size: &size,
		Description: fmt.Sprintf("%s, %d bytes, kept in the object store; read it with resources/read", name, size)}
	if u, exp, ok := c.worker.presign(ctx, c, key); ok {
		link.Meta = map[string]any{proto.MetaSignedURL: u, proto.MetaSignedURLExpires: exp.UTC().Format(time.RFC3339)}
	}
	return link, nil
}
