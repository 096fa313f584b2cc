package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/mcpqtest"
)

// TestAllowNetworks: the tools file's allowNetworks, $VARS expanded and
// normalised, reach the program as $MCPQ_ALLOW_NETWORKS; a worker's own
// MCPQ_ALLOW_NETWORKS never does.
func TestAllowNetworks(t *testing.T) {
	t.Setenv("FLEET_NETS", "::1, 192.168.7.9/16")
	t.Setenv("MCPQ_ALLOW_NETWORKS", "0.0.0.0/0")
	t.Setenv(helperEnv, "env")
	dir := t.TempDir()
	body := "tools:\n  - name: a\n    command: [" + self(t) + ", MCPQ_ALLOW_NETWORKS]\n" +
		"    allowNetworks: [127.0.0.1, 10.0.0.0/8, \"${FLEET_NETS}\", \"${UNSET_NETS}\"]\n" +
		"  - name: b\n    command: [" + self(t) + ", MCPQ_ALLOW_NETWORKS]\n"
	p := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tools, err := Load(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := mcpqtest.New(t, tools...)
	for name, want := range map[string]string{"a": "127.0.0.1/32,10.0.0.0/8,::1/128,192.168.0.0/16", "b": ""} {
		res := env.Call(t, name, map[string]any{}).Result(t)
		var got map[string]*string
		if err := json.Unmarshal([]byte(res.Content[0].Text), &got); err != nil || got["MCPQ_ALLOW_NETWORKS"] == nil {
			t.Fatalf("%s: %+v (%v)", name, res.Content, err)
		}
		if *got["MCPQ_ALLOW_NETWORKS"] != want {
			t.Errorf("%s: MCPQ_ALLOW_NETWORKS = %q, want %q", name, *got["MCPQ_ALLOW_NETWORKS"], want)
		}
	}
}

func TestAllowNetworksAndLinksErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ body, want string }{
		{"allowNetworks: 127.0.0.1", "field allowNetworks: line 4: a list of IP addresses or prefixes, not a scalar"},
		{"allowNetworks: [localhost]", `field allowNetworks: line 4: "localhost" is not an IP address or prefix`},
		{"allowNetworks: [10.0.0.0/33]", `field allowNetworks: line 4: "10.0.0.0/33" is not an IP prefix`},
		{"links: '*.mp4'", "field links: line 4: a list of file name patterns, not a scalar"},
		{"links: ['[x']", `field links: "[x" is not a file name pattern`},
	} {
		p := filepath.Join(dir, "tools.yaml")
		if err := os.WriteFile(p, []byte("tools:\n  - name: a\n    command: [a]\n    "+tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.body, err, tc.want)
		}
	}
	if _, err := New(Spec{Name: "a", Command: []string{"a"}, AllowNetworks: []string{"nope"}}); err == nil ||
		!strings.Contains(err.Error(), `field allowNetworks: "nope" is not an IP address`) {
		t.Errorf("New: %v", err)
	}
}
