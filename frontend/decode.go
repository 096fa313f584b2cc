package frontend

import (
	"errors"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Every request's two decodes (the JSON-RPC envelope, then params with
// _meta) and its response go through the v2 implementation of encoding/json
// (github.com/go-json-experiment/json, the code GOEXPERIMENT=jsonv2 puts
// behind encoding/json), with encoding/json's own semantics
// (jsonv1.DefaultOptionsV1): the same values, the same output, read in one
// pass where encoding/json first validates the whole input and then
// decodes it.
var v1 = jsonv1.DefaultOptionsV1()

// decodeJSON unmarshals b into v as encoding/json does.
func decodeJSON(b []byte, v any) error { return jsonv2.Unmarshal(b, v, v1) }

// unique is v1 with duplicate member names refused at any depth: the
// envelope is decoded with it once, so every later read of params (the
// header check, _meta, the method's own decode, tool arguments) sees
// objects whose names are unique and cannot disagree about which of two
// members counts (issue 13, finding 4).
var unique = jsonv2.JoinOptions(v1, jsontext.AllowDuplicateNames(false))

// decodeEnvelope is decodeJSON that also fails on a duplicate member name
// anywhere in b (a *jsonv1.SyntaxError, like any other syntax error).
func decodeEnvelope(b []byte, v any) error { return jsonv2.Unmarshal(b, v, unique) }

// encodeJSON marshals v as encoding/json does.
func encodeJSON(v any) ([]byte, error) { return jsonv2.Marshal(v, v1) }

// isSyntaxError reports whether a decodeJSON error means b was not JSON.
func isSyntaxError(err error) bool {
	if err == nil {
		return false // without the errors.As below, whose target escapes (an allocation a request)
	}
	var syntax *jsonv1.SyntaxError
	return errors.As(err, &syntax)
}
