// Package argcheck checks tool arguments against a tool's inputSchema with
// github.com/google/jsonschema-go, for the front end (before any task
// exists) and for the public test package (which answers as the front end
// does). The 2026-07-28 tools page classes input validation errors as tool
// execution errors: the answer is a successful CallToolResult with isError
// and a text naming the failing argument, so the model can correct the
// call (a malformed request, such as arguments that are not an object,
// stays a -32602 protocol error, which callers decide before this).
package argcheck

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpq/mcpq/proto"
)

// Resolve is the resolved schema, or nil when there is nothing to check:
// a schema that accepts every object (callers refuse arguments that are
// not an object before), or one jsonschema-go cannot use (not a schema, a
// $ref to a remote document), whose tool's arguments are the worker's to
// check. Resolve once per schema, not per call.
func Resolve(schema json.RawMessage) *jsonschema.Resolved {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil
	}
	if anyObject(schema) {
		return nil
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil
	}
	return rs
}

// anyObject reports whether schema is {"type":"object"} and nothing else.
func anyObject(schema json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(schema, &m) != nil || len(m) != 1 {
		return false
	}
	var typ string
	return json.Unmarshal(m["type"], &typ) == nil && typ == "object"
}

// Check is nil when args (an object, or empty for none) satisfy rs (nil rs:
// nothing to check), else the tool execution error naming what failed.
func Check(rs *jsonschema.Resolved, tool string, args json.RawMessage) *proto.CallToolResult {
	if rs == nil {
		return nil
	}
	var v any = map[string]any{}
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &v); err != nil {
			return invalid(tool, err.Error())
		}
	}
	if err := rs.Validate(v); err != nil {
		return invalid(tool, describe(err.Error()))
	}
	return nil
}

func invalid(tool, why string) *proto.CallToolResult {
	return &proto.CallToolResult{ResultBase: proto.ResultBase{ResultType: proto.ResultComplete},
		Content: []proto.Content{proto.TextContent(fmt.Sprintf("Invalid arguments for tool %s: %s", tool, why))},
		IsError: true}
}

// validatingPrefix matches jsonschema-go's "validating <pointer>: " prefixes.
var validatingPrefix = regexp.MustCompile(`^validating ([^:]*): `)

// wholeRational matches a whole number jsonschema-go prints as a fraction.
var wholeRational = regexp.MustCompile(`\b(-?\d+)/1\b`)

// describe turns a jsonschema-go validation error into a message that
// names the failing argument by its property path (`limits.max`).
func describe(msg string) string {
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
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		switch seg {
		case "properties", "items", "additionalProperties", "prefixItems":
			continue
		}
		parts = append(parts, strings.NewReplacer("~1", "/", "~0", "~").Replace(seg))
	}
	return fmt.Sprintf("argument %q: %s", strings.Join(parts, "."), msg)
}
