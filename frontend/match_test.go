package frontend_test

// match compares a decoded JSON response with an expectation written in
// the testdata files (and inline in Go tests):
//
//   - an object matches when every key it names matches; extra keys in the
//     response are allowed unless the object has "<exact>": true;
//   - the string "<absent>" as a value means the key must not be there;
//   - an array matches element by element and must have the same length;
//   - "<any>", "<string>", "<int>" (an integer literal), "<number>",
//     "<object>", "<iso8601>" and "<taskid>" (128-bit base64url) match by
//     kind; "~re" matches a string against the regular expression re;
//   - numbers compare by their literal text, so an id echoes verbatim;
//   - anything else must be equal.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

var isoRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func match(path string, want, got any) error {
	if path == "" {
		path = "$"
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || g == nil {
			return fmt.Errorf("%s: want an object, got %s", path, show(got))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		exact := w["<exact>"] == true
		for _, k := range keys {
			if k == "<exact>" {
				continue
			}
			gv, has := g[k]
			if w[k] == "<absent>" {
				if has {
					return fmt.Errorf("%s.%s: want absent, got %s", path, k, show(gv))
				}
				continue
			}
			if !has {
				return fmt.Errorf("%s.%s: missing (want %s)", path, k, show(w[k]))
			}
			if err := match(path+"."+k, w[k], gv); err != nil {
				return err
			}
		}
		if exact {
			for k := range g {
				if _, named := w[k]; !named {
					return fmt.Errorf("%s.%s: unexpected key (object must be exact), value %s", path, k, show(g[k]))
				}
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array, got %s", path, show(got))
		}
		if len(g) != len(w) {
			return fmt.Errorf("%s: want %d elements, got %d: %s", path, len(w), len(g), show(got))
		}
		for i := range w {
			if err := match(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); err != nil {
				return err
			}
		}
		return nil
	case string:
		return matchString(path, w, got)
	case json.Number:
		g, ok := got.(json.Number)
		if !ok || g.String() != w.String() {
			return fmt.Errorf("%s: want %s, got %s", path, w, show(got))
		}
		return nil
	default: // bool, nil
		if want != got {
			return fmt.Errorf("%s: want %s, got %s", path, show(want), show(got))
		}
		return nil
	}
}

func matchString(path, w string, got any) error {
	fail := func(what string) error { return fmt.Errorf("%s: want %s, got %s", path, what, show(got)) }
	s, isStr := got.(string)
	switch w {
	case "<any>":
		return nil
	case "<string>":
		if !isStr {
			return fail("a string")
		}
		return nil
	case "<object>":
		if _, ok := got.(map[string]any); !ok {
			return fail("an object")
		}
		return nil
	case "<number>", "<int>":
		n, ok := got.(json.Number)
		if !ok || (w == "<int>" && strings.ContainsAny(n.String(), ".eE")) {
			return fail(w)
		}
		return nil
	case "<iso8601>":
		if !isStr || !isoRE.MatchString(s) {
			return fail("an ISO 8601 time")
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return fail("an ISO 8601 time")
		}
		return nil
	case "<taskid>":
		if !isStr || len(s) < 22 {
			return fail("a task id")
		}
		if _, err := base64.RawURLEncoding.DecodeString(s); err != nil {
			return fail("a task id")
		}
		return nil
	}
	if strings.HasPrefix(w, "~") {
		if !isStr || !regexp.MustCompile(w[1:]).MatchString(s) {
			return fail("a string matching " + w[1:])
		}
		return nil
	}
	if !isStr || s != w {
		return fail(fmt.Sprintf("%q", w))
	}
	return nil
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// TestMatch holds the matcher itself to account, so a lenient matcher
// cannot make the replay pass by accident.
func TestMatch(t *testing.T) {
	dec := func(s string) any {
		var v any
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		want, got string
		ok        bool
	}{
		{`{"a":1}`, `{"a":1,"b":2}`, true},
		{`{"a":1,"<exact>":true}`, `{"a":1,"b":2}`, false},
		{`{"a":"<absent>"}`, `{"a":null}`, false},
		{`{"a":"<absent>"}`, `{}`, true},
		{`{"a":1}`, `{"a":1.0}`, false},
		{`{"a":"1"}`, `{"a":1}`, false},
		{`{"a":"<int>"}`, `{"a":60000}`, true},
		{`{"a":"<int>"}`, `{"a":6e4}`, false},
		{`{"a":"<int>"}`, `{"a":"60000"}`, false},
		{`{"a":null}`, `{"a":null}`, true},
		{`{"a":null}`, `{}`, false},
		{`[1,2]`, `[1,2,3]`, false},
		{`{"t":"<iso8601>"}`, `{"t":"2026-07-28T10:00:00.000Z"}`, true},
		{`{"t":"<iso8601>"}`, `{"t":"yesterday"}`, false},
		{`{"id":"<taskid>"}`, `{"id":"AAAAAAAAAAAAAAAAAAAAAA"}`, true},
		{`{"id":"<taskid>"}`, `{"id":"short"}`, false},
		{`{"m":"~^Unknown tool"}`, `{"m":"Unknown tool: x"}`, true},
		{`{"m":"~^Unknown tool"}`, `{"m":"tool"}`, false},
		{`{"o":"<object>"}`, `{"o":[]}`, false},
	}
	for _, tt := range tests {
		err := match("", dec(tt.want), dec(tt.got))
		if (err == nil) != tt.ok {
			t.Errorf("match(%s, %s) = %v, want ok=%v", tt.want, tt.got, err, tt.ok)
		}
	}
}
