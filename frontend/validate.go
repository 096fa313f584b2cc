package frontend

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// Tool arguments are validated against the tool's inputSchema before any
// task record or job exists. The 2026-07-28 tools page classes input
// validation errors as tool execution errors: the answer is a successful
// CallToolResult with isError and a text naming the failing argument, so
// the model can correct the call (a malformed request, such as arguments
// that are not an object, stays a -32602 protocol error).

// resolveSchemas returns the resolved inputSchema of every tool in defs by
// catalog key, reusing prev's resolution of a schema that did not change:
// a catalog reload resolves only new schemas, and a call resolves none. A
// schema jsonschema-go cannot resolve (say a $ref to a remote document) is
// left out: its tool's arguments are the worker's to check.
func resolveSchemas(defs []taskstate.ToolDef, prev map[string]*jsonschema.Resolved) (byKey, bySchema map[string]*jsonschema.Resolved) {
	byKey, bySchema = map[string]*jsonschema.Resolved{}, map[string]*jsonschema.Resolved{}
	for i := range defs {
		d := &defs[i]
		if d.Kind != taskstate.KindTool || len(d.Tool.InputSchema) == 0 {
			continue
		}
		text := string(d.Tool.InputSchema)
		rs, ok := bySchema[text]
		if !ok {
			if rs, ok = prev[text]; !ok {
				rs = resolveSchema(d.Tool.InputSchema)
			}
			bySchema[text] = rs
		}
		if rs != nil {
			byKey[d.Key()] = rs
		}
	}
	return byKey, bySchema
}

// resolveSchema is the resolved schema, or nil when it cannot be used.
func resolveSchema(schema json.RawMessage) *jsonschema.Resolved {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil
	}
	return rs
}

// checkArguments is nil when args satisfy rs (nil rs: nothing to check),
// else the tool execution error naming what failed.
func checkArguments(rs *jsonschema.Resolved, tool string, args json.RawMessage) *proto.CallToolResult {
	if rs == nil {
		return nil
	}
	var v any = map[string]any{}
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &v); err != nil {
			return invalidArguments(tool, err.Error())
		}
	}
	if err := rs.Validate(v); err != nil {
		return invalidArguments(tool, describeInvalid(err.Error()))
	}
	return nil
}

func invalidArguments(tool, why string) *proto.CallToolResult {
	return &proto.CallToolResult{ResultBase: proto.ResultBase{ResultType: proto.ResultComplete},
		Content: []proto.Content{proto.TextContent(fmt.Sprintf("Invalid arguments for tool %s: %s", tool, why))},
		IsError: true}
}

// validatingPrefix matches jsonschema-go's "validating <pointer>: " prefixes.
var validatingPrefix = regexp.MustCompile(`^validating ([^:]*): `)

// wholeRational matches a whole number jsonschema-go prints as a fraction.
var wholeRational = regexp.MustCompile(`\b(-?\d+)/1\b`)

// describeInvalid turns a jsonschema-go validation error into a message
// that names the failing argument as a path of property names (`limits.max`).
func describeInvalid(msg string) string {
	path := ""
	for {
		m := validatingPrefix.FindStringSubmatch(msg)
		if m == nil {
			break
		}
		if m[1] != "root" {
			path = m[1]
		}
		msg = msg[len(m[0]):]
	}
	msg = wholeRational.ReplaceAllString(msg, "$1")
	if path == "" {
		return msg
	}
	var parts []string
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := 0; i < len(segs); i++ {
		switch segs[i] {
		case "properties", "items", "additionalProperties", "prefixItems":
			continue
		}
		parts = append(parts, strings.NewReplacer("~1", "/", "~0", "~").Replace(segs[i]))
	}
	return fmt.Sprintf("argument %q: %s", strings.Join(parts, "."), msg)
}

// argSchema is the resolved inputSchema of the tool with catalog key key
// (nil: nothing to check).
func (c *catalog) argSchema(key string) *jsonschema.Resolved {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.argSchemas[key]
}
