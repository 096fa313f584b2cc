package frontend

import (
	"context"
	"encoding/json"

	"github.com/mcpq/mcpq/proto"
)

// discoverTTLMs: capabilities change only with a deploy.
const discoverTTLMs = 60 * 60 * 1000

func (s *Server) discover(ctx context.Context, c *call) (any, error) {
	return &proto.DiscoverResult{
		CacheHints:        proto.CacheHints{TTLMs: discoverTTLMs, CacheScope: proto.CachePublic},
		SupportedVersions: s.versions,
		Capabilities: proto.ServerCapabilities{
			Tools:       &proto.ListChangedCapability{ListChanged: true},
			Prompts:     &proto.ListChangedCapability{ListChanged: true},
			Resources:   &proto.ResourcesCapability{Subscribe: true, ListChanged: true},
			Completions: &struct{}{},
			Logging:     &struct{}{},
			Extensions:  map[string]json.RawMessage{proto.TasksExtension: json.RawMessage(`{}`)},
		},
		Instructions: "Long-running tools answer with a task: poll tasks/get until it is terminal.",
	}, nil
}
