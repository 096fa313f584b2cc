package command

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want string // statusText, "status:...", "checkpoint:..." or "" for no message
		err  string
	}{
		{line: `{"status":"frame 3/10"}`, want: "status:frame 3/10"},
		{line: `  {"status":""}  `, want: "status:"},
		{line: `{"progress":3,"total":10}`, want: "3/10"},
		{line: `{"progress":3,"total":10,"message":"rendering"}`, want: "rendering"},
		{line: `{"progress":0.5}`, want: "0.5"},
		{line: `{"checkpoint":{"done":[1,2]}}`, want: `checkpoint:{"done":[1,2]}`},
		{line: `{"checkpoint":0}`, want: `checkpoint:0`},
		{line: ``},
		{line: "   \r"},
		{line: `status: hi`, err: "not a JSON object"},
		{line: `["status"]`, err: "not a JSON object"},
		{line: `null`, err: "not a JSON object"},
		{line: `{}`, err: `exactly one of "status", "progress", "checkpoint", "input" and "usage"`},
		{line: `{"usage":12}`, want: "usage:12"},
		{line: `{"usage":0}`, err: `"usage" is not an integer above 0`},
		{line: `{"usage":1.5}`, err: `"usage" is not an integer above 0`},
		{line: `{"usage":"3"}`, err: `"usage" is not an integer above 0`},
		{line: `{"usage":3,"status":"x"}`, err: "exactly one of"},
		{line: `{"status":"a","checkpoint":1}`, err: "exactly one of"},
		{line: `{"status":"a","total":1}`, err: `a "status" line holds no other key`},
		{line: `{"checkpoint":1,"message":"x"}`, err: `a "checkpoint" line holds no other key`},
		{line: `{"checkpoint":null}`, err: `"checkpoint" is null`},
		{line: `{"status":3}`, err: `"status" is not a string`},
		{line: `{"progress":"3"}`, err: `"progress" is not a number`},
		{line: `{"progress":-1}`, err: `"progress" is not a number of at least 0`},
		{line: `{"progress":1,"total":0}`, err: `"total" is not a number above 0`},
		{line: `{"progress":1,"message":7}`, err: `"message" is not a string`},
		{line: `{"stat":"x"}`, err: `unknown key "stat"`},
		{line: `{"input":{"key":"ok","method":"elicitation/create","params":{"message":"go?"}}}`, want: `input:ok elicitation/create {"message":"go?"}`},
		{line: `{"input":{"key":"../x","method":"m"}}`, err: `"input" key "../x" is not`},
		{line: `{"input":{"key":".hidden","method":"m"}}`, err: `"input" key ".hidden" is not`},
		{line: `{"input":{"key":"k"}}`, err: `"input" has no "method"`},
		{line: `{"input":{"key":"k","method":"m","extra":1}}`, err: `unknown field "extra"`},
		{line: `{"input":"k"}`, err: `"input" is not an object`},
		{line: `{"input":{"key":"k","method":"m"},"status":"x"}`, err: "exactly one of"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			m, ok, err := parseLine([]byte(tc.line))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			switch {
			case !ok:
			case m.Status != nil:
				got = "status:" + *m.Status
			case m.Checkpoint != nil:
				got = "checkpoint:" + string(m.Checkpoint)
			case m.Input != nil:
				got = "input:" + m.Input.Key + " " + m.Input.Method + " " + string(m.Input.Params)
			case m.Usage > 0:
				got = fmt.Sprint("usage:", m.Usage)
			default:
				got = m.statusText()
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
