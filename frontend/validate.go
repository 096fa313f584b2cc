package frontend

import (
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpq/mcpq/internal/argcheck"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// Tool arguments are validated against the tool's inputSchema before any
// task record or job exists, and answered as internal/argcheck says.

// resolveSchemas returns the resolved inputSchema of every tool in defs by
// catalog key, reusing prev's resolution of a schema text that did not
// change: a catalog reload resolves only new schemas, and a call none. A
// schema argcheck cannot resolve is left out (nothing is checked).
func resolveSchemas(defs []catalog.Entry, prev map[string]*jsonschema.Resolved) (byKey, bySchema map[string]*jsonschema.Resolved) {
	byKey, bySchema = map[string]*jsonschema.Resolved{}, map[string]*jsonschema.Resolved{}
	for i := range defs {
		d := &defs[i]
		if d.Kind != catalog.KindTool || len(d.Tool.InputSchema) == 0 {
			continue
		}
		text := string(d.Tool.InputSchema)
		rs, ok := bySchema[text]
		if !ok {
			if rs, ok = prev[text]; !ok {
				rs = argcheck.Resolve(d.Tool.InputSchema)
			}
			bySchema[text] = rs
		}
		if rs != nil {
			byKey[d.Key()] = rs
		}
	}
	return byKey, bySchema
}

// argSchema is the resolved inputSchema of the tool with catalog key key
// (nil: nothing to check).
func (c *catalogCache) argSchema(key string) *jsonschema.Resolved {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.argSchemas[key]
}
