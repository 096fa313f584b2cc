package frontend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/mcpq/mcpq/proto"
)

// A tasks/update answer is checked against the request it answers when it
// arrives: an answer of the wrong shape is refused with -32602 naming its
// key, and the task stays input_required for a good one. Written into the
// record, it would reach the handler, which can only end the task failed
// ("Invalid input response ...", worker/ask.go): a client's typo would
// throw the work so far away (issue 25, item 3). The checks are those
// worker/ask.go makes when it decodes the answer, so an answer that
// passes here decodes there.

// checkResponses checks each answer whose key names a pending request of
// pending (the record's inputRequests); other keys are the store's to
// judge (unknown, already answered).
func checkResponses(pending, answers map[string]json.RawMessage) error {
	keys := make([]string, 0, len(answers))
	for k := range answers {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad key in a stable order
	for _, k := range keys {
		req, ok := pending[k]
		if !ok {
			continue
		}
		if why := checkResponse(req, answers[k]); why != "" {
			return proto.NewError(proto.CodeInvalidParams, "Invalid params: inputResponses[%q]: %s", k, why)
		}
	}
	return nil
}

// checkResponse says what is wrong with answer to the input request req,
// or "" when nothing is.
func checkResponse(req, answer json.RawMessage) string {
	var r struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(req, &r); err != nil {
		return "" // not a request this server wrote: nothing to hold it to
	}
	switch r.Method {
	case proto.MethodElicit:
		return checkElicit(r.Params, answer)
	case proto.MethodCreateMessage:
		var res proto.CreateMessageResult
		if err := json.Unmarshal(answer, &res); err != nil || res.Content == nil {
			return "expected a CreateMessageResult (role and content)"
		}
	case proto.MethodListRoots:
		var res struct {
			Roots *[]proto.Root `json:"roots"`
		}
		if err := json.Unmarshal(answer, &res); err != nil || res.Roots == nil {
			return `expected a ListRootsResult ("roots": an array of {uri, name})`
		}
	}
	return ""
}

// checkElicit checks an ElicitResult: its action, and for accept its
// content against the request's requestedSchema.
func checkElicit(params, answer json.RawMessage) string {
	var res proto.ElicitResult
	if err := json.Unmarshal(answer, &res); err != nil {
		return "expected an ElicitResult object"
	}
	switch res.Action {
	case proto.ElicitDecline, proto.ElicitCancel:
		return ""
	case proto.ElicitAccept:
	default:
		return fmt.Sprintf(`action %q: expected "accept", "decline" or "cancel"`, res.Action)
	}
	content := map[string]json.RawMessage{}
	if len(res.Content) > 0 && !bytes.Equal(res.Content, []byte("null")) {
		if err := json.Unmarshal(res.Content, &content); err != nil {
			return "content: expected an object of the form's values"
		}
	}
	var p struct {
		RequestedSchema struct {
			Properties map[string]struct {
				Type string            `json:"type"`
				Enum []json.RawMessage `json:"enum"`
			} `json:"properties"`
		} `json:"requestedSchema"`
	}
	_ = json.Unmarshal(params, &p) // a schema this server did not write checks nothing
	names := make([]string, 0, len(content))
	for n := range content {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		prop, ok := p.RequestedSchema.Properties[n]
		if !ok {
			continue
		}
		if why := checkValue(prop.Type, prop.Enum, content[n]); why != "" {
			return fmt.Sprintf("content[%q]: %s", n, why)
		}
	}
	return ""
}

// checkValue checks one form value against its property's type and enum.
func checkValue(typ string, enum []json.RawMessage, v json.RawMessage) string {
	if bytes.Equal(v, []byte("null")) {
		return ""
	}
	var ok bool
	switch typ {
	case "string":
		var s string
		ok = json.Unmarshal(v, &s) == nil
		if ok && len(enum) > 0 {
			ok = slices.ContainsFunc(enum, func(e json.RawMessage) bool {
				var es string
				return json.Unmarshal(e, &es) == nil && es == s
			})
			if !ok {
				return "not one of the schema's enum values"
			}
		}
	case "number":
		var f float64
		ok = json.Unmarshal(v, &f) == nil
	case "integer":
		var f float64
		ok = json.Unmarshal(v, &f) == nil && f == math.Trunc(f)
	case "boolean":
		var b bool
		ok = json.Unmarshal(v, &b) == nil
	case "array":
		var ss []string
		ok = json.Unmarshal(v, &ss) == nil
	default:
		return ""
	}
	if !ok {
		return "expected a value of type " + typ
	}
	return ""
}
