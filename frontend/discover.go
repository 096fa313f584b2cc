package frontend

import (
	"context"
	"encoding/json"

	"github.com/mcpq/mcpq/proto"
)

// Cache hints: what a client may reuse and for how long.
const (
	discoverTTLMs  = 60 * 60 * 1000 // capabilities change only with a deploy
	toolsListTTLMs = 60 * 1000      // workers may publish new tools at any time
)

func (s *Server) discover(ctx context.Context, c *call) (any, error) {
	return &proto.DiscoverResult{
		CacheHints:        proto.CacheHints{TTLMs: discoverTTLMs, CacheScope: proto.CachePublic},
		SupportedVersions: proto.SupportedVersions,
		Capabilities: proto.ServerCapabilities{
			Tools:      &proto.ListChangedCapability{},
			Extensions: map[string]json.RawMessage{proto.TasksExtension: json.RawMessage(`{}`)},
		},
		Instructions: "Long-running tools answer with a task: poll tasks/get until it is terminal.",
	}, nil
}

func (s *Server) listTools(ctx context.Context, c *call) (any, error) {
	defs, err := s.catalog.list(ctx)
	if err != nil {
		return nil, err
	}
	tools := make([]proto.Tool, len(defs))
	for i, d := range defs {
		tools[i] = d.Tool
	}
	return &proto.ListToolsResult{
		CacheHints: proto.CacheHints{TTLMs: toolsListTTLMs, CacheScope: proto.CachePublic},
		Tools:      tools,
	}, nil
}
