package argcheck

import (
	"encoding/json"
	"strings"
	"testing"
)

const schema = `{"type":"object","additionalProperties":false,"required":["seconds"],
"properties":{"seconds":{"type":"integer","minimum":1},"label":{"type":"string","maxLength":40},
"limits":{"type":"object","required":["max"],"properties":{"max":{"type":"number","exclusiveMaximum":1.5}}}}}`

func TestCheck(t *testing.T) {
	rs := Resolve(json.RawMessage(schema))
	if rs == nil {
		t.Fatal("schema did not resolve")
	}
	cases := []struct{ args, want string }{
		{`{"seconds":3,"label":"x","limits":{"max":1}}`, ""},
		{``, `missing properties: ["seconds"]`},
		{`null`, `missing properties: ["seconds"]`},
		{`{"seconds":0}`, `argument "seconds": minimum: 0 is less than 1`},
		{`{"seconds":1,"label":"` + strings.Repeat("a", 41) + `"}`, `argument "label": maxLength`},
		{`{"seconds":1,"limits":{"max":2}}`, `argument "limits.max": exclusiveMaximum`},
		{`{"seconds":1,"limits":{}}`, `argument "limits": required: missing properties: ["max"]`},
		{`{"seconds":1,"x":1}`, `unexpected additional properties ["x"]`},
	}
	for _, tc := range cases {
		res := Check(rs, "wait", json.RawMessage(tc.args))
		switch {
		case tc.want == "" && res != nil:
			t.Errorf("%s: refused: %+v", tc.args, res)
		case tc.want == "":
		case res == nil:
			t.Errorf("%s: accepted", tc.args)
		case !res.IsError || res.ResultType != "complete" || len(res.Content) != 1 ||
			!strings.HasPrefix(res.Content[0].Text, "Invalid arguments for tool wait: ") ||
			!strings.Contains(res.Content[0].Text, tc.want):
			t.Errorf("%s: got %+v, want a tool error containing %q", tc.args, res, tc.want)
		}
	}
}

func TestResolveNothingToCheck(t *testing.T) {
	for _, s := range []string{``, `{"type":"object"}`, ` { "type" : "object" } `, `{"$ref":"https://example.com/s.json"}`, `[1]`} {
		if rs := Resolve(json.RawMessage(s)); rs != nil {
			t.Errorf("%q resolved to a check", s)
		}
	}
	if Resolve(json.RawMessage(`{"type":"object","required":["a"]}`)) == nil {
		t.Error("a schema with a requirement checks nothing")
	}
}

func BenchmarkCheck(b *testing.B) {
	rs := Resolve(json.RawMessage(schema))
	args := json.RawMessage(`{"seconds":3,"label":"render","limits":{"max":1}}`)
	b.ReportAllocs()
	for b.Loop() {
		if Check(rs, "wait", args) != nil {
			b.Fatal("refused")
		}
	}
}
