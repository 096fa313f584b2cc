package command

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/mcpqtest"
)

func TestCheckTemplate(t *testing.T) {
	props := map[string]bool{"frames": true, "prompt": true}
	for _, tc := range []struct {
		name string
		argv []string
		want string // "" for accepted
	}{
		{"whole placeholders", []string{"python3", "gen.py", "--frames", "{frames}", "{prompt}"}, ""},
		{"literal braces are literal", []string{"jq", "{}", "{ .a }", "{1}", "x{"}, ""},
		{"empty", nil, "empty"},
		{"empty program", []string{""}, "item 0 (the program) is empty"},
		{"placeholder program", []string{"{prompt}"}, "the program must be fixed"},
		{"embedded", []string{"gen", "--frames={frames}"}, `item 1 "--frames={frames}" embeds the placeholder {frames}`},
		{"two in one item", []string{"gen", "{frames}{prompt}"}, "embeds the placeholder {frames}"},
		{"suffix", []string{"gen", "{frames}.png"}, "embeds"},
		{"unknown property", []string{"gen", "{seed}"}, "placeholder {seed} names no property of inputSchema"},
		{"NUL", []string{"gen", "a\x00b"}, "item 1 holds a NUL byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkTemplate(tc.argv, props)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestExpandValues(t *testing.T) {
	args := map[string]json.RawMessage{"n": json.RawMessage(`3`), "f": json.RawMessage(`2.50`), "b": json.RawMessage(`true`),
		"o": json.RawMessage(`{ "k": [1, "x"] }`), "null": json.RawMessage(`null`), "s": json.RawMessage(`"a\"b"`)}
	got, err := expand([]string{"p", "{n}", "{f}", "{b}", "{o}", "--absent", "{absent}", "--null", "{null}", "{s}"}, args)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p", "3", "2.50", "true", `{"k":[1,"x"]}`, "--absent", "--null", `a"b`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("expand = %q, want %q", got, want)
	}
	if _, err := expand([]string{"p", "{s}"}, map[string]json.RawMessage{"s": json.RawMessage(`"a\u0000b"`)}); err == nil ||
		!strings.Contains(err.Error(), `argument "s": holds a NUL byte`) {
		t.Fatalf("NUL in a string argument: %v", err)
	}
}

// TestArgvIsInjectionProof runs a real program (the test binary printing
// its argv as JSON) through a worker: every value arrives as exactly one
// argv item, byte for byte, and nothing a shell would act on happens.
func TestArgvIsInjectionProof(t *testing.T) {
	values := []string{
		"; touch pwned", "$(touch pwned)", "`touch pwned`", "a && touch pwned", "| touch pwned > pwned",
		"--flag=x", "-rf", "--", "-", "line1\nline2\n", " spaced  out ", "", "'\"\\", "*", "~", "$HOME",
		"{other}", "\t", "ünïcødé ✓",
	}
	dir := t.TempDir()
	props := map[string]any{}
	argv := []string{self(t)}
	args := map[string]any{}
	for i, v := range values {
		k := fmt.Sprintf("a%d", i)
		props[k] = map[string]any{"type": "string"}
		argv = append(argv, "--literal", "{"+k+"}")
		args[k] = v
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	env := mcpqtest.New(t, mustNew(t, Spec{Name: "argv", InputSchema: schema, Command: argv, Dir: dir,
		Env: map[string]string{helperEnv: "argv"}}))
	res := env.Call(t, "argv", args).Result(t)
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("result %+v", res)
	}
	var got []string
	if err := json.Unmarshal([]byte(res.Content[0].Text), &got); err != nil {
		t.Fatalf("program printed %q: %v", res.Content[0].Text, err)
	}
	var want []string
	for _, v := range values {
		want = append(want, "--literal", v)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("argv\n got %q\nwant %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("a shell ran: pwned exists")
	}
}
