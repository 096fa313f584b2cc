package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// maxLinks bounds how many linked URIs a server publishes as mcpq
// resources; past it a new link is still granted but not published (its
// read answers "Resource not found"), and the worker logs it.
const maxLinks = 4096

// link makes the resource_links of an upstream result readable through
// mcpq by the task's owner only: each URI is granted to the owner for the
// task's life (Call.GrantRead) and published once as a resource whose
// read forwards resources/read to this upstream after checking the
// reader's grant (Call.MayRead). Blocks mcpq made itself (stored results)
// are left alone.
func (s *Server) link(ctx context.Context, c *worker.Call, res *proto.CallToolResult) error {
	var uris []string
	for _, b := range res.Content {
		if b.Type == "resource_link" && b.URI != "" && !proto.IsBlobURI(b.URI) {
			uris = append(uris, b.URI)
		}
	}
	if len(uris) == 0 {
		return nil
	}
	if err := c.GrantRead(ctx, uris...); err != nil {
		return err
	}
	for _, b := range res.Content {
		if b.Type != "resource_link" || b.URI == "" || proto.IsBlobURI(b.URI) {
			continue
		}
		s.mu.Lock()
		known, full := s.links[b.URI], len(s.links) >= maxLinks
		if !known && !full {
			s.links[b.URI] = true
		}
		s.mu.Unlock()
		switch {
		case known:
			continue
		case full:
			s.log.Warn("linked resource not published: the server has too many", "uri", b.URI, "max", maxLinks)
			continue
		}
		r := worker.Resource{Resource: proto.Resource{URI: b.URI, Name: b.Name, Description: b.Description, MimeType: b.MimeType},
			Handler: s.readLinked(b.URI)}
		if err := s.reg.AddResource(ctx, r); err != nil {
			s.mu.Lock()
			delete(s.links, b.URI)
			s.mu.Unlock()
			return err
		}
	}
	return nil
}

// readLinked reads uri upstream for a reader a task of whose linked it;
// anyone else gets the "Resource not found" of a URI never served.
func (s *Server) readLinked(uri string) func(ctx context.Context, c *worker.Call) (*proto.ReadResourceResult, error) {
	return func(ctx context.Context, c *worker.Call) (*proto.ReadResourceResult, error) {
		ok, err := c.MayRead(ctx, uri)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &proto.Error{Code: proto.CodeInvalidParams, Message: "Resource not found", Data: map[string]string{"uri": uri}}
		}
		sl, sess, err := s.pool.take(ctx)
		if sl != nil {
			defer s.pool.release(sl)
		}
		if err != nil {
			return nil, err
		}
		raw, err := sess.request(ctx, proto.MethodResourcesRead, map[string]any{"uri": uri}, nil, nil)
		if err != nil {
			return nil, s.taskErr("resources/read "+uri, err)
		}
		var out proto.ReadResourceResult
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, fmt.Errorf("upstream %s: resources/read %s answered what does not decode: %v", s.spec.Name, uri, err)
		}
		return &out, nil
	}
}
