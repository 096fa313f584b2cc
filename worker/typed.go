package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/mcpq/mcpq/proto"
)

// TypedHandler runs one call of a typed tool with its decoded arguments.
// Its result becomes the tool's result (see NewTool); errors are classified
// as for Handler: a *proto.Error fails the task, ErrCancelled cancels it,
// any other error is a tool error (isError) with the error's text.
type TypedHandler[In, Out any] func(ctx context.Context, c *Call, in In) (Out, error)

// NewTool is a tool whose input schema is inferred from In, and whose
// output schema is inferred from Out when Out is a struct (or a map):
//
//   - In is a struct (or a map with string keys). Its schema comes from
//     github.com/google/jsonschema-go: the `json` tag names a property,
//     omitempty or omitzero makes it optional (every other field is
//     required), no other property is allowed, and a `jsonschema` tag is
//     the property's description. An `mcpq` tag adds what jsonschema-go's
//     tags cannot say, as comma-separated key=value pairs: minimum,
//     maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength,
//     minItems, maxItems, enum (values split on |), format and title, e.g.
//     `mcpq:"minimum=1,maximum=60"` or `mcpq:"enum=eu|us"`.
//   - Every front end validates a call's arguments against the schema
//     before any task exists, so the handler gets arguments that satisfy
//     it and re-checks nothing the schema states.
//   - A struct or map Out is answered as structuredContent plus one text
//     block holding the same JSON; a string Out as one text block; any
//     other Out as one text block of its JSON. A *proto.CallToolResult
//     Out is answered as is.
//
// Set the other Tool fields (Title, Policy, TTL, Queue, ...) on the result.
// A type the schema cannot describe makes New or AddTool fail with the
// reason; NewTool itself never fails.
func NewTool[In, Out any](name, description string, h TypedHandler[In, Out]) Tool {
	t := Tool{Name: name, Description: description}
	in := reflect.TypeFor[In]()
	for in.Kind() == reflect.Pointer {
		in = in.Elem()
	}
	schema, err := objectSchema(in, "input")
	if err != nil {
		t.err = fmt.Errorf("worker: tool %q: %w", name, err)
		return t
	}
	t.InputSchema = schema
	out := reflect.TypeFor[Out]()
	structured := false
	if out != reflect.TypeFor[*proto.CallToolResult]() {
		base := out
		for base.Kind() == reflect.Pointer {
			base = base.Elem()
		}
		if base.Kind() == reflect.Struct || base.Kind() == reflect.Map {
			if t.OutputSchema, err = objectSchema(base, "output"); err != nil {
				t.err = fmt.Errorf("worker: tool %q: %w", name, err)
				return t
			}
			structured = true
		}
	}
	t.Handler = func(ctx context.Context, c *Call) (*proto.CallToolResult, error) {
		var args In
		raw := c.Arguments
		if len(raw) == 0 || string(raw) == "null" {
			raw = json.RawMessage(`{}`)
		}
		if err := json.Unmarshal(raw, &args); err != nil {
			// The front end validated the arguments against the schema,
			// so this is a schema that does not describe In exactly.
			return ErrorResult(fmt.Sprintf("Invalid arguments for tool %s: %v", name, err)), nil
		}
		res, err := h(ctx, c, args)
		if err != nil {
			return nil, err
		}
		return typedResult(res, structured)
	}
	return t
}

// typedResult is the CallToolResult of a typed handler's result v.
func typedResult(v any, structured bool) (*proto.CallToolResult, error) {
	switch r := v.(type) {
	case *proto.CallToolResult:
		return r, nil
	case string:
		return TextResult(r), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, proto.NewError(proto.CodeInternalError, "Internal error: tool result not encodable: %v", err)
	}
	res := TextResult(string(b))
	if structured && string(b) != "null" {
		res.StructuredContent = b
	}
	return res, nil
}
