package frontend

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// Cache hints: what a client may reuse and for how long.
const (
	// listTTLMs: workers may publish new entries at any time (and announce them).
	listTTLMs = 60 * 1000
	// readTTLMs: resource contents may change; subscribers are told.
	readTTLMs = 5 * 1000
)

func (s *Server) listPrompts(ctx context.Context, c *call) (any, error) {
	defs, err := s.catalog.list(ctx)
	if err != nil {
		return nil, err
	}
	prompts := []proto.Prompt{}
	for _, d := range defs {
		if d.Kind == catalog.KindPrompt {
			prompts = append(prompts, *d.Prompt)
		}
	}
	return &proto.ListPromptsResult{CacheHints: proto.CacheHints{TTLMs: listTTLMs, CacheScope: proto.CachePublic},
		Prompts: prompts}, nil
}

func (s *Server) getPrompt(ctx context.Context, c *call) (any, error) {
	var p struct {
		proto.GetPromptParams
		InputResponses json.RawMessage `json:"inputResponses"`
		RequestState   *string         `json:"requestState"`
	}
	if err := decodeParams(c, &p); err != nil {
		return nil, err
	}
	def, err := s.catalog.get(ctx, catalog.EntryKey(catalog.KindPrompt, p.Name))
	if err != nil {
		return nil, err
	}
	if def == nil {
		return nil, proto.NewError(proto.CodeInvalidParams, "Unknown prompt: %s", p.Name)
	}
	for _, a := range def.Prompt.Arguments {
		if _, ok := p.Arguments[a.Name]; a.Required && !ok {
			return nil, proto.NewError(proto.CodeInvalidParams, "Missing required argument: %s", a.Name)
		}
	}
	args, _ := json.Marshal(p.Arguments)
	return s.invoke(ctx, c, invocation{def: def, method: proto.MethodPromptsGet, name: p.Name, args: args,
		responses: p.InputResponses, state: p.RequestState})
}

func (s *Server) listResources(ctx context.Context, c *call) (any, error) {
	defs, err := s.catalog.list(ctx)
	if err != nil {
		return nil, err
	}
	res := []proto.Resource{}
	for _, d := range defs {
		if d.Kind == catalog.KindResource {
			res = append(res, *d.Resource)
		}
	}
	return &proto.ListResourcesResult{CacheHints: proto.CacheHints{TTLMs: listTTLMs, CacheScope: proto.CachePublic},
		Resources: res}, nil
}

func (s *Server) listTemplates(ctx context.Context, c *call) (any, error) {
	defs, err := s.catalog.list(ctx)
	if err != nil {
		return nil, err
	}
	tpls := []proto.ResourceTemplate{}
	for _, d := range defs {
		if d.Kind == catalog.KindTemplate {
			tpls = append(tpls, *d.Template)
		}
	}
	return &proto.ListResourceTemplatesResult{CacheHints: proto.CacheHints{TTLMs: listTTLMs, CacheScope: proto.CachePublic},
		ResourceTemplates: tpls}, nil
}

func (s *Server) readResource(ctx context.Context, c *call) (any, error) {
	var p struct {
		proto.ReadResourceParams
		InputResponses json.RawMessage `json:"inputResponses"`
		RequestState   *string         `json:"requestState"`
	}
	if err := decodeParams(c, &p); err != nil {
		return nil, err
	}
	if p.URI == "" {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: uri is required")
	}
	if proto.IsBlobURI(p.URI) {
		return s.readBlob(ctx, c, p.URI)
	}
	def, err := s.catalog.get(ctx, catalog.EntryKey(catalog.KindResource, p.URI))
	if err != nil {
		return nil, err
	}
	args := map[string]any{"uri": p.URI}
	if def == nil {
		defs, err := s.catalog.list(ctx)
		if err != nil {
			return nil, err
		}
		for i := range defs {
			if defs[i].Kind != catalog.KindTemplate {
				continue
			}
			if vars, ok := matchTemplate(defs[i].Template.URITemplate, p.URI); ok {
				def, args["variables"] = &defs[i], vars
				break
			}
		}
	}
	if def == nil {
		return nil, resourceNotFound(p.URI)
	}
	raw, _ := json.Marshal(args)
	res, err := s.invoke(ctx, c, invocation{def: def, method: proto.MethodResourcesRead, name: p.URI, args: raw,
		responses: p.InputResponses, state: p.RequestState})
	if r, ok := res.(rawResult); ok { // a read is cacheable: add the hints the handler left out
		if _, has := r["ttlMs"]; !has {
			r["ttlMs"] = json.RawMessage(`5000`)
		}
		if _, has := r["cacheScope"]; !has {
			r["cacheScope"] = json.RawMessage(`"` + proto.CachePublic + `"`)
		}
	}
	return res, err
}

var templateVar = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)

// matchTemplate matches uri against a level-1 RFC 6570 template ({name}
// stands for one path segment) and returns the variables.
func matchTemplate(tpl, uri string) (map[string]string, bool) {
	var names []string
	pattern := "^"
	last := 0
	for _, m := range templateVar.FindAllStringSubmatchIndex(tpl, -1) {
		pattern += regexp.QuoteMeta(tpl[last:m[0]]) + "([^/?#]+)"
		names = append(names, tpl[m[2]:m[3]])
		last = m[1]
	}
	pattern += regexp.QuoteMeta(tpl[last:]) + "$"
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, false
	}
	sub := re.FindStringSubmatch(uri)
	if sub == nil {
		return nil, false
	}
	vars := make(map[string]string, len(names))
	for i, n := range names {
		vars[n] = sub[i+1]
	}
	return vars, true
}

func (s *Server) complete(ctx context.Context, c *call) (any, error) {
	var p proto.CompleteParams
	if err := decodeParams(c, &p); err != nil {
		return nil, err
	}
	if len(p.Ref) == 0 || len(p.Argument) == 0 {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: ref and argument are required")
	}
	def, err := s.catalog.get(ctx, catalog.EntryKey(catalog.KindCompletion, ""))
	if err != nil {
		return nil, err
	}
	if def == nil {
		return &proto.CompleteResult{Completion: proto.Completion{Values: []string{}}}, nil
	}
	args, _ := json.Marshal(map[string]json.RawMessage{"ref": p.Ref, "argument": p.Argument, "context": orNull(p.Context)})
	return s.invoke(ctx, c, invocation{def: def, method: proto.MethodComplete, name: strings.TrimSpace(string(p.Ref)), args: args})
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}
