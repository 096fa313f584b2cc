package frontend

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/mcpq/mcpq/objstore"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/billing"
)

// storeArguments puts a call's arguments, over InlineMaxArgumentBytes, in
// the object store at the task's objstore.ArgumentsKey and returns the key
// for the task record. It runs after every check of the call and before
// the create script, so a worker never claims a record whose arguments
// are not stored yet; the worker reads them back before the handler runs
// and deletes them when the task ends (worker/blobs.go).
func (s *Server) storeArguments(ctx context.Context, id string, args []byte) (string, error) {
	key := objstore.ArgumentsKey(id)
	if err := s.cfg.Blobs.Put(ctx, key, args, "application/json"); err != nil {
		s.log.Error("store large arguments", "task", id, "bytes", len(args), "err", err)
		return "", proto.NewError(proto.CodeInternalError,
			"Internal error: the arguments (%d bytes) are over the inline limit and the object store refused them", len(args))
	}
	return key, nil
}

// dropArguments deletes stored arguments whose create failed with err,
// when no task will ever read them: the create was refused (live-task or
// argument-byte cap, a taken id, not enough funds), or its record was
// failed unscheduled.
// After any other error the record may exist (Redis unreachable, not
// replicated): the key stays, for the reaper at the task's expiry or the
// workers' age sweep (docs/tools.md, "Large arguments").
func (s *Server) dropArguments(ctx context.Context, key string, err error) {
	var jobErr *taskstate.JobError
	if !errors.Is(err, taskstate.ErrLimit) && !errors.Is(err, taskstate.ErrArgsLimit) &&
		!errors.Is(err, taskstate.ErrExists) && !errors.Is(err, billing.ErrFunds) && !errors.As(err, &jobErr) {
		return
	}
	if derr := s.cfg.Blobs.Delete(context.WithoutCancel(ctx), key); derr != nil {
		s.log.Warn("delete the arguments of a refused call (the age sweep will)", "key", key, "err", derr)
	}
}

// blobReadTTLMs: a stored result never changes, but it ends with its task.
const blobReadTTLMs = 60 * 1000

// resourceNotFound is the answer to a resources/read of a URI nobody serves,
// also of a stored result the caller does not own.
func resourceNotFound(uri string) error {
	return &proto.Error{Code: proto.CodeInvalidParams, Message: "Resource not found", Data: map[string]string{"uri": uri}}
}

// readBlob serves resources/read of a stored result (a resource_link a
// worker made of a block too large for the task record; worker/blobs.go)
// to the principal owning its task. Every other caller, a malformed URI, a
// task gone and a server without a store all get resourceNotFound, so the
// answer tells nothing about other principals' tasks.
func (s *Server) readBlob(ctx context.Context, c *call, uri string) (any, error) {
	id, name, ok := proto.ParseBlobURI(uri)
	if !ok || s.cfg.Blobs == nil || !taskstate.ValidID(id) {
		return nil, resourceNotFound(uri)
	}
	if _, err := s.store.Get(ctx, taskstate.Ref{Owner: taskstate.OwnerTag(c.principal), ID: id}); err != nil {
		if errors.Is(err, taskstate.ErrNotFound) {
			return nil, resourceNotFound(uri)
		}
		return nil, err
	}
	o, err := s.cfg.Blobs.Get(ctx, id+"/"+name)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, resourceNotFound(uri)
	}
	if err != nil {
		s.log.Error("read stored result", "task", id, "blob", name, "err", err)
		return nil, proto.NewError(proto.CodeInternalError, "Internal error: the stored result could not be read")
	}
	rc := proto.ResourceContents{URI: uri, MimeType: o.ContentType}
	if strings.HasPrefix(o.ContentType, "text/") && utf8.Valid(o.Data) {
		text := string(o.Data)
		rc.Text = &text
	} else {
		b := base64.StdEncoding.EncodeToString(o.Data)
		rc.Blob = &b
	}
	return &proto.ReadResourceResult{CacheHints: proto.CacheHints{TTLMs: blobReadTTLMs, CacheScope: proto.CachePrivate},
		Contents: []proto.ResourceContents{rc}}, nil
}
