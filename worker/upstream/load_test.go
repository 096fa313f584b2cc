package upstream

import (
	"strings"
	"testing"
	"time"
)

func lookup(vars map[string]string) Lookup {
	return func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
}

func TestParseServers(t *testing.T) {
	file := `
tools:
  - {name: x, command: [echo]}
servers:
  - name: everything
    command: [npx, server-everything]
    env: {A: b}
    queue: media
    tools: [trigger-*, echo]
    prefix: ev.
    concurrency: 3
    timeout: 2m
    overrides:
      trigger-long-running-operation: {policy: task, ttl: unlimited, rerun: true, price: {base: 5}}
  - name: remote
    url: https://mcp.example.com/mcp
    headers: {Authorization: "Bearer ${TOKEN}"}
    protocolVersion: "2026-07-28"
`
	specs, err := Parse([]byte(file), "t.yaml", "/etc/x", lookup(map[string]string{"TOKEN": "s3"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("got %d servers", len(specs))
	}
	ev, rm := specs[0], specs[1]
	if ev.Cwd != "/etc/x" || ev.Concurrency != 3 || ev.Timeout != 2*time.Minute || ev.Prefix != "ev." || ev.Queue != "media" {
		t.Errorf("everything: %+v", ev)
	}
	if !ev.selects("trigger-x") || !ev.selects("echo") || ev.selects("add") {
		t.Error("tools patterns select wrongly")
	}
	o := ev.Overrides["trigger-long-running-operation"]
	if o.Policy != "task" || o.TTL != -1 || o.Rerun == nil || !*o.Rerun || o.Price == nil || o.Price.Base != 5 {
		t.Errorf("override: %+v", o)
	}
	if rm.Headers["Authorization"] != "Bearer s3" || rm.ProtocolVersion != VersionStateless {
		t.Errorf("remote: %+v", rm)
	}
	none, err := Parse([]byte("tools: [{name: x, command: [echo]}]\n"), "t.yaml", "/", nil)
	if err != nil || none != nil {
		t.Errorf("a file without servers: %v, %v", none, err)
	}
}

func TestParseServersRefusesBadConfiguration(t *testing.T) {
	cases := []struct{ name, file, want string }{
		{"not a list", "servers: {a: 1}", `t.yaml:1: "servers" must be a list`},
		{"no name", "servers: [{command: [x]}]", "server 1: field name: missing"},
		{"unknown field", "servers: [{name: a, command: [x], comand: [y]}]", `server "a": line 1: unknown field "comand"`},
		{"neither", "servers: [{name: a}]", `server "a": field command or url: one is needed`},
		{"both", "servers: [{name: a, command: [x], url: 'http://h/'}]", "give one, not both"},
		{"bad url", "servers: [{name: a, url: 'ftp://h/'}]", `field url: "ftp://h/" is not an http or https URL`},
		{"unset variable", "servers: [{name: a, url: 'http://h/', headers: {X: '${NOPE}'}}]", "environment variable NOPE is not set"},
		{"bad version", "servers: [{name: a, command: [x], protocolVersion: '2024-01-01'}]", "field protocolVersion"},
		{"bad duration", "servers: [{name: a, command: [x], timeout: soon}]", `field timeout: line 1: "soon" is not a duration`},
		{"bad policy", "servers: [{name: a, command: [x], overrides: {t: {policy: later}}}]", `field overrides: t: field policy: "later"`},
		{"bad rerun", "servers: [{name: a, command: [x], rerun: yes please}]", "field rerun"},
		{"twice", "servers: [{name: a, command: [x]}, {name: a, command: [y]}]", `server "a": declared twice`},
		{"bad pattern", "servers: [{name: a, command: [x], tools: ['[']}]", "field tools"},
		{"negative", "servers: [{name: a, command: [x], concurrency: -1}]", "field concurrency: negative"},
		{"headers on stdio", "servers: [{name: a, command: [x], headers: {A: b}}]", "field headers: only for a url server"},
		{"principal header on stdio", "servers: [{name: a, command: [x], principalHeader: X-P}]", "field principalHeader: only for a url server"},
		{"principal header not a name", "servers: [{name: a, url: 'http://h/', principalHeader: 'X P'}]", `"X P" is not an HTTP header name`},
		{"principal header the protocol's", "servers: [{name: a, url: 'http://h/', principalHeader: authorization}]", "a header mcpq or the protocol sets"},
		{"principal header configured", "servers: [{name: a, url: 'http://h/', principalHeader: X-P, headers: {x-p: b}}]", "also in headers"},
		{"principal meta reserved", "servers: [{name: a, command: [x], principalMeta: io.modelcontextprotocol/who}]", "a key the protocol reserves"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.file), "t.yaml", "/", lookup(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "t.yaml:") {
				t.Fatalf("error %v, want it to name the file and hold %q", err, c.want)
			}
		})
	}
}
