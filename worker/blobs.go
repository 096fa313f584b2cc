package worker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcpq/mcpq/objstore"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// BlobConfig says where a tool result's content blocks too large for the
// task record go (docs/tools.md, "Large results"). Zero values take the
// documented defaults; a nil Store keeps every result inline.
type BlobConfig struct {
	// Store keeps the large blocks; nil keeps everything in the record.
	Store objstore.Store
	// InlineMaxBytes is the largest content block (its JSON) kept in the
	// record; a larger one is stored and replaced by a resource_link
	// (default 256 KiB).
	InlineMaxBytes int
	// SignedURLTTL is how long the signed URL put in a resource_link's
	// _meta works, never past the task's deadline (default 15m; only for
	// stores that sign URLs).
	SignedURLTTL time.Duration
	// MaxAge is how old a stored block may get before the sweep removes
	// it even if no reaper saw its task expire (default Config.MaxTTL +
	// 1h: no task lives longer, unless unlimited TTLs are allowed).
	MaxAge time.Duration
	// SweepInterval is how often the worker sweeps (default 10m).
	SweepInterval time.Duration
}

// DefaultInlineMaxBytes is BlobConfig.InlineMaxBytes's default.
const DefaultInlineMaxBytes = 256 << 10

func (c *BlobConfig) setDefaults(maxTTL time.Duration) {
	if c.InlineMaxBytes <= 0 {
		c.InlineMaxBytes = DefaultInlineMaxBytes
	}
	if c.SignedURLTTL <= 0 {
		c.SignedURLTTL = 15 * time.Minute
	}
	if c.MaxAge <= 0 {
		c.MaxAge = maxTTL + time.Hour
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = 10 * time.Minute
	}
}

// blobKey is the object key of a task's stored block name
// ("<attempt>.<index>"): the task id first, so the reaper removes all of
// a task's blocks by that prefix.
func blobKey(taskID, name string) string { return taskID + "/" + name }

// offload replaces each content block of a tool result whose JSON is over
// InlineMaxBytes with a resource_link to a stored copy. Block names carry
// the attempt, so a stale delivery never overwrites a newer one's blocks.
// Other results (prompts, resource reads, completions) stay as they are.
func (w *Worker) offload(ctx context.Context, c *Call, res any) (any, error) {
	bc := w.cfg.Blobs
	tr, ok := res.(*proto.CallToolResult)
	if bc.Store == nil || !ok || tr == nil {
		return res, nil
	}
	var out []proto.Content
	for i, b := range tr.Content {
		raw, err := json.Marshal(b)
		if err != nil || len(raw) <= bc.InlineMaxBytes {
			continue // an unencodable block is reported by outcome
		}
		data, mime, name, err := blockPayload(b)
		if err != nil {
			return nil, proto.NewError(proto.CodeInternalError, "Internal error: content block %d: %v", i, err)
		}
		blob := strconv.FormatInt(c.Attempt, 10) + "." + strconv.Itoa(i)
		key := blobKey(c.TaskID, blob)
		if err := bc.Store.Put(ctx, key, data, mime); err != nil {
			return nil, proto.NewError(proto.CodeInternalError, "Internal error: content block %d (%d bytes) is too large for the task record and the object store refused it: %v", i, len(raw), err)
		}
		size := int64(len(data))
		link := proto.Content{Type: "resource_link", URI: proto.BlobURI(c.TaskID, blob), Name: name,
			MimeType: mime, Size: &size, Annotations: b.Annotations,
			Description: fmt.Sprintf("%s content of %d bytes, kept out of the task record; read it with resources/read", b.Type, size)}
		if u, exp, ok := w.presign(ctx, c, key); ok {
			link.Meta = map[string]any{proto.MetaSignedURL: u, proto.MetaSignedURLExpires: exp.UTC().Format(time.RFC3339)}
		}
		if out == nil {
			out = append([]proto.Content(nil), tr.Content...)
		}
		out[i] = link
	}
	if out == nil {
		return res, nil
	}
	cp := *tr
	cp.Content = out
	return &cp, nil
}

// presign signs a URL for key that works for SignedURLTTL or until the
// task's deadline, whichever is sooner; ok is false when the store cannot
// sign or the deadline has passed.
func (w *Worker) presign(ctx context.Context, c *Call, key string) (string, time.Time, bool) {
	now := time.Now()
	ttl := w.cfg.Blobs.SignedURLTTL
	if d := c.record.Deadline(); !d.IsZero() {
		ttl = min(ttl, d.Sub(now))
	}
	if ttl < time.Second {
		return "", time.Time{}, false
	}
	u, err := w.cfg.Blobs.Store.PresignGet(ctx, key, ttl)
	if err != nil {
		return "", time.Time{}, false // ErrNoPresign, or the link still reads through resources/read
	}
	return u, now.Add(ttl), true
}

// blockPayload is the bytes a content block stands for, their media type
// and a name for the resource_link.
func blockPayload(b proto.Content) (data []byte, mime, name string, err error) {
	switch b.Type {
	case "image", "audio":
		data, err = base64.StdEncoding.DecodeString(b.Data)
		if err != nil {
			return nil, "", "", fmt.Errorf("%s data is not base64: %v", b.Type, err)
		}
		mime = b.MimeType
		if mime == "" {
			mime = "application/octet-stream"
		}
		return data, mime, b.Type + extension(mime), nil
	case "text":
		return []byte(b.Text), "text/plain; charset=utf-8", "text.txt", nil
	case "resource":
		var r proto.ResourceContents
		if err := json.Unmarshal(b.Resource, &r); err != nil {
			return nil, "", "", fmt.Errorf("embedded resource: %v", err)
		}
		mime = r.MimeType
		switch {
		case r.Blob != nil:
			if data, err = base64.StdEncoding.DecodeString(*r.Blob); err != nil {
				return nil, "", "", fmt.Errorf("embedded resource blob is not base64: %v", err)
			}
			if mime == "" {
				mime = "application/octet-stream"
			}
		case r.Text != nil:
			data = []byte(*r.Text)
			if mime == "" {
				mime = "text/plain; charset=utf-8"
			}
		default:
			return nil, "", "", fmt.Errorf("embedded resource has neither text nor blob")
		}
		name = r.URI
		if name == "" {
			name = "resource"
		}
		return data, mime, name, nil
	default:
		// Any other block is stored as its JSON.
		raw, err := json.Marshal(b)
		return raw, "application/json", b.Type + ".json", err
	}
}

func extension(mime string) string {
	_, sub, ok := strings.Cut(mime, "/")
	if !ok || sub == "" || strings.ContainsAny(sub, "+; ") {
		return ""
	}
	return "." + sub
}

// loadArguments sets c.Arguments to the arguments the front end kept in
// the object store (frontend/blobs.go) when the record holds their key. A
// *proto.Error fails the task (no store here, the object is gone); a store
// error is a transientError (the job is delivered again).
func (w *Worker) loadArguments(ctx context.Context, c *Call) error {
	key := c.record.ArgumentsRef
	if key == "" {
		return nil
	}
	if w.cfg.Blobs.Store == nil {
		return proto.NewError(proto.CodeInternalError,
			"Internal error: the task's arguments are in the object store and this worker has none (front ends and workers need the same --blob-url)")
	}
	o, err := w.cfg.Blobs.Store.Get(ctx, key)
	switch {
	case errors.Is(err, objstore.ErrNotFound):
		return proto.NewError(proto.CodeInternalError, "Internal error: the task's arguments are no longer in the object store")
	case err != nil:
		return &transientError{fmt.Errorf("read the task's arguments from the object store: %w", err)}
	}
	c.Arguments = o.Data
	return nil
}

// deleteArguments removes the arguments an ended task kept in the object
// store: key, or the task's objstore.ArgumentsKey when the caller cannot
// tell whether it had any (a job whose task was cancelled before it ran).
// What this misses the reaper removes with the task's prefix.
func (w *Worker) deleteArguments(ctx context.Context, id, key string) {
	if w.cfg.Blobs.Store == nil {
		return
	}
	if key == "" {
		key = objstore.ArgumentsKey(id)
	}
	if err := w.cfg.Blobs.Store.Delete(ctx, key); err != nil && ctx.Err() == nil {
		w.log.Warn("delete an ended task's stored arguments (the reaper will)", "task", id, "err", err)
	}
}

// deleteBlobs removes the stored blocks of the tasks the reaper ended.
func (w *Worker) deleteBlobs(ctx context.Context, ids []string) {
	for _, id := range ids {
		if err := w.cfg.Blobs.Store.DeletePrefix(ctx, id); err != nil && ctx.Err() == nil {
			w.log.Warn("delete expired task's stored results", "task", id, "err", err)
		}
	}
}

// sweepBlobs removes stored blocks older than MaxAge (tasks whose record
// expired with no reaper to see it).
func (w *Worker) sweepBlobs(ctx context.Context) {
	n, err := w.cfg.Blobs.Store.Sweep(ctx, time.Now().Add(-w.cfg.Blobs.MaxAge))
	switch {
	case err != nil && ctx.Err() == nil:
		w.log.Warn("sweep stored results", "err", err)
	case n > 0:
		w.log.Info("swept old stored results", "count", n)
	}
}

// reap finalizes expired tasks and removes their stored blocks.
func (w *Worker) reap(ctx context.Context) (int, error) {
	if w.cfg.Blobs.Store == nil {
		return w.store.Reap(ctx, nil)
	}
	var ids []string
	n, err := w.store.Reap(ctx, func(ref taskstate.Ref) { ids = append(ids, ref.ID) })
	w.deleteBlobs(ctx, ids)
	return n, err
}
