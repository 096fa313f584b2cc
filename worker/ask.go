package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/mcpq/mcpq/proto"
)

// Typed input: an elicitation form from a Go struct, a sampling request and
// a roots listing, each asked under a key with Call.Input's rules (the
// handler returns the parking error as is and runs again from the start
// once the client answered; keys are never reused within a task).

// Elicitation is the user's answer to a form asked with Elicit.
type Elicitation[T any] struct {
	// Action is accept, decline or cancel.
	Action proto.ElicitAction
	// Content is the submitted form (its zero value unless accepted).
	Content T
}

// Accepted reports whether the user submitted the form.
func (e Elicitation[T]) Accepted() bool { return e.Action == proto.ElicitAccept }

// Elicit asks the user to fill in a form whose schema is inferred from T
// (a struct of string, number, integer, boolean and string-enum fields, with
// the tags NewTool reads) and decodes the answer into T. The error of a
// client that did not declare elicitation is -32021, before anything is
// asked; an answer that is not an ElicitResult matching T is -32602.
func Elicit[T any](ctx context.Context, c *Call, key, message string) (Elicitation[T], error) {
	var out Elicitation[T]
	schema, err := formSchema(reflect.TypeFor[T]())
	if err != nil {
		return out, err
	}
	answers, err := c.Input(ctx, map[string]proto.InputRequest{key: {Method: proto.MethodElicit,
		Params: proto.ElicitParams{Message: message, RequestedSchema: schema}}})
	if err != nil {
		return out, err
	}
	var r proto.ElicitResult
	if err := json.Unmarshal(answers[key], &r); err != nil {
		return out, badAnswer(key, "an ElicitResult object")
	}
	switch r.Action {
	case proto.ElicitAccept:
		if len(r.Content) == 0 {
			r.Content = json.RawMessage(`{}`)
		}
		if err := json.Unmarshal(r.Content, &out.Content); err != nil {
			return out, badAnswer(key, fmt.Sprintf("form content matching the requested schema (%v)", err))
		}
	case proto.ElicitDecline, proto.ElicitCancel:
	default:
		return out, badAnswer(key, `an ElicitResult with action "accept", "decline" or "cancel"`)
	}
	out.Action = r.Action
	return out, nil
}

// Sample asks the client's model to continue p's messages (-32021 when the
// client did not declare sampling) and returns its answer.
func (c *Call) Sample(ctx context.Context, key string, p proto.CreateMessageParams) (*proto.CreateMessageResult, error) {
	answers, err := c.Input(ctx, map[string]proto.InputRequest{key: {Method: proto.MethodCreateMessage, Params: p}})
	if err != nil {
		return nil, err
	}
	var r proto.CreateMessageResult
	if err := json.Unmarshal(answers[key], &r); err != nil || r.Content == nil {
		return nil, badAnswer(key, "a CreateMessageResult object")
	}
	return &r, nil
}

// ListRoots asks the client for its roots (-32021 when the client did not
// declare roots).
func (c *Call) ListRoots(ctx context.Context, key string) ([]proto.Root, error) {
	answers, err := c.Input(ctx, map[string]proto.InputRequest{key: {Method: proto.MethodListRoots, Params: struct{}{}}})
	if err != nil {
		return nil, err
	}
	var r struct {
		Roots *[]proto.Root `json:"roots"`
	}
	if err := json.Unmarshal(answers[key], &r); err != nil || r.Roots == nil {
		return nil, badAnswer(key, "a ListRootsResult object")
	}
	return *r.Roots, nil
}

// badAnswer is the -32602 error for an answer that does not decode.
func badAnswer(key, want string) error {
	return proto.NewError(proto.CodeInvalidParams, "Invalid input response %q: expected %s", key, want)
}

// forms caches each form type's schema (reflect.Type → formEntry).
var forms sync.Map

type formEntry struct {
	schema json.RawMessage
	err    error
}

// formSchema is the elicitation schema of struct type t: a flat object of
// primitive properties, as elicitation/create allows.
func formSchema(t reflect.Type) (json.RawMessage, error) {
	if e, ok := forms.Load(t); ok {
		return e.(formEntry).schema, e.(formEntry).err
	}
	schema, err := buildForm(t)
	if err != nil {
		err = proto.NewError(proto.CodeInternalError, "Internal error: form %s: %v", t, err)
	}
	forms.Store(t, formEntry{schema, err})
	return schema, err
}

func buildForm(t reflect.Type) (json.RawMessage, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("a form is a struct, not a %s", t.Kind())
	}
	s, err := schemaFor(t)
	if err != nil {
		return nil, err
	}
	for name, p := range s.Properties {
		switch p.Type {
		case "string", "number", "integer", "boolean":
		default:
			return nil, fmt.Errorf("field %q: a form field is a string, number, integer or boolean", name)
		}
	}
	// The form schema is a restricted subset: no additionalProperties.
	s.AdditionalProperties = nil
	return json.Marshal(s)
}
