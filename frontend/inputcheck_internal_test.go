package frontend

import (
	"encoding/json"
	"testing"
)

// TestCheckResponse: the answers worker/ask.go decodes pass; declines and
// cancels carry no content to check; requests of no known method check
// nothing.
func TestCheckResponse(t *testing.T) {
	form := json.RawMessage(`{"method":"elicitation/create","params":{"message":"?","requestedSchema":` +
		`{"type":"object","properties":{"n":{"type":"number"},"tags":{"type":"array"}}}}}`)
	for _, c := range []struct {
		req, answer string
		ok          bool
	}{
		{string(form), `{"action":"decline"}`, true},
		{string(form), `{"action":"cancel","content":{"n":"x"}}`, true},
		{string(form), `{"action":"accept"}`, true},
		{string(form), `{"action":"accept","content":null}`, true},
		{string(form), `{"action":"accept","content":{"n":1.5,"tags":["a"],"free":"x"}}`, true},
		{string(form), `{"action":"accept","content":{"n":null}}`, true},
		{string(form), `{"action":"accept","content":{"tags":[1]}}`, false},
		{string(form), `{"action":""}`, false},
		{string(form), `{"action":"ACCEPT"}`, false},
		{`{"method":"sampling/createMessage"}`, `{"role":"assistant","content":[{"type":"text","text":"a"}]}`, true},
		{`{"method":"roots/list"}`, `{"roots":[]}`, true},
		{`{"method":"roots/list"}`, `{"roots":null}`, false},
		{`{"method":"x/unknown"}`, `{"anything":1}`, true},
	} {
		why := checkResponse(json.RawMessage(c.req), json.RawMessage(c.answer))
		if (why == "") != c.ok {
			t.Errorf("%s for %s: %q, want ok=%v", c.answer, c.req, why, c.ok)
		}
	}
}
