package frontend

import (
	"context"

	"github.com/mcpq/mcpq/internal/argcheck"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

func (s *Server) callTool(ctx context.Context, c *call) (any, error) {
	p, err := callParams(c)
	if err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: name is required")
	}
	if len(p.Arguments) > 0 && string(p.Arguments) != "null" && p.Arguments[0] != '{' {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: arguments must be an object")
	}
	def, err := s.catalog.get(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	if def == nil || def.Kind != catalog.KindTool {
		return nil, proto.NewError(proto.CodeInvalidParams, "Unknown tool: %s", p.Name)
	}
	if err := s.checkScopes(c, def); err != nil {
		return nil, err
	}
	if c.hook == nil { // Mcp-Param-* headers are the modern transport's
		if err := checkParamHeaders(c.httpReq.Header, def.Tool.InputSchema, p.Arguments); err != nil {
			return nil, err
		}
	}
	if bad := argcheck.Check(s.catalog.argSchema(def.Key()), p.Name, p.Arguments); bad != nil {
		return bad, nil // before any task record or job exists (validate.go)
	}
	return s.invoke(ctx, c, invocation{def: def, method: proto.MethodToolsCall, name: p.Name,
		args: p.Arguments, responses: p.InputResponses, state: p.RequestState})
}

func (s *Server) listTools(ctx context.Context, c *call) (any, error) {
	defs, err := s.catalog.list(ctx)
	if err != nil {
		return nil, err
	}
	tools := []proto.Tool{}
	scope := proto.CachePublic
	held := s.heldScopes(c)
	for _, d := range defs {
		if d.Kind != catalog.KindTool {
			continue
		}
		if len(d.Scopes) > 0 {
			scope = proto.CachePrivate // what is listed depends on the caller
			if !held.allow(d.Scopes) {
				continue
			}
		}
		tools = append(tools, d.Tool)
	}
	return &proto.ListToolsResult{
		CacheHints: proto.CacheHints{TTLMs: listTTLMs, CacheScope: scope},
		Tools:      tools,
	}, nil
}

// callParams reads tools/call params from the fields decoded with _meta;
// only when one has the wrong type are params decoded again, for the
// precise error.
func callParams(c *call) (proto.CallToolParams, error) {
	var p proto.CallToolParams
	n := c.names
	name, nameOK := rawString(n.Name)
	state, stateOK := rawString(n.RequestState)
	if nameOK && (stateOK || len(n.RequestState) == 0 || string(n.RequestState) == "null") {
		p.Name, p.Arguments, p.InputResponses = name, n.Arguments, n.InputResponses
		if stateOK {
			p.RequestState = &state
		}
		return p, nil
	}
	return p, decodeParams(c, &p)
}
