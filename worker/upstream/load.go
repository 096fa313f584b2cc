package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mcpq/mcpq/internal/yamlnode"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// serverKeys are the keys of one server in a tools file.
var serverKeys = []string{"name", "command", "env", "cwd", "url", "headers", "protocolVersion",
	"queue", "tools", "prefix", "concurrency", "timeout", "rerun", "overrides", "principalHeader", "principalMeta"}

// overrideKeys are the keys of one entry of a server's overrides.
var overrideKeys = []string{"policy", "ttl", "pollInterval", "timeout", "price", "queue", "rerun"}

// Lookup reads an environment variable (os.LookupEnv in cmd/mcpq).
type Lookup func(name string) (string, bool)

// Load reads the "servers" list of a tools file (YAML or JSON; other keys
// are the command loader's) and returns its servers; a file without one
// returns none. A header value "${NAME}" (or one holding it) takes NAME
// from env; an unset variable is an error. A relative cwd is relative to
// the file's folder. An error names the file, the line, the server and the
// reason.
func Load(file string, env Lookup) ([]Spec, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tools file: %w", err)
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, fmt.Errorf("tools file: %w", err)
	}
	return Parse(data, file, dir, env)
}

// Parse is Load on a file's bytes; name is the file for errors and dir
// the folder a relative cwd starts from.
func Parse(data []byte, name, dir string, env Lookup) ([]Spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil // the command loader reports the file's shape
	}
	root := doc.Content[0]
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "servers" {
			list = root.Content[i+1]
		}
	}
	if list == nil {
		return nil, nil
	}
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		return nil, fmt.Errorf("%s:%d: \"servers\" must be a list of at least one server", name, list.Line)
	}
	var specs []Spec
	seen := map[string]bool{}
	for i, n := range list.Content {
		where := fmt.Sprintf("%s:%d: server %d", name, n.Line, i+1)
		s, err := decodeServer(n, dir, env)
		if s.Name != "" {
			where = fmt.Sprintf("%s:%d: server %q", name, n.Line, s.Name)
		}
		if err == nil && seen[s.Name] {
			err = errors.New("declared twice")
		}
		if err == nil {
			err = s.check()
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		seen[s.Name] = true
		specs = append(specs, s)
	}
	return specs, nil
}

// fieldsOf maps an object node's keys to their values, refusing keys not
// in known and keys given twice.
func fieldsOf(n *yaml.Node, known []string) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: an object, not a %s", n.Line, yamlnode.KindName(n))
	}
	fields := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		switch {
		case !slices.Contains(known, k.Value):
			return nil, fmt.Errorf("line %d: unknown field %q (known: %s)", k.Line, k.Value, strings.Join(known, ", "))
		case fields[k.Value] != nil:
			return nil, fmt.Errorf("line %d: field %s given twice", k.Line, k.Value)
		}
		fields[k.Value] = n.Content[i+1]
	}
	return fields, nil
}

// decodeServer decodes one server; the name first, so later errors name it.
func decodeServer(n *yaml.Node, dir string, env Lookup) (Spec, error) {
	var s Spec
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "name" {
				_ = yamlnode.Scalar(n.Content[i+1], &s.Name)
			}
		}
	}
	f, err := fieldsOf(n, serverKeys)
	if err != nil {
		return s, err
	}
	if f["name"] == nil {
		return s, errors.New("field name: missing")
	}
	for _, x := range []struct {
		key string
		to  *string
	}{{"name", &s.Name}, {"cwd", &s.Cwd}, {"url", &s.URL}, {"protocolVersion", &s.ProtocolVersion},
		{"queue", &s.Queue}, {"prefix", &s.Prefix}, {"principalHeader", &s.PrincipalHeader}, {"principalMeta", &s.PrincipalMeta}} {
		if err := optScalar(f, x.key, x.to); err != nil {
			return s, err
		}
	}
	if err := optList(f, "command", &s.Command); err != nil {
		return s, err
	}
	if err := optList(f, "tools", &s.Tools); err != nil {
		return s, err
	}
	if s.Env, err = optMap(f, "env", nil); err != nil {
		return s, err
	}
	if s.Headers, err = optMap(f, "headers", env); err != nil {
		return s, err
	}
	if v := f["concurrency"]; v != nil {
		if err := v.Decode(&s.Concurrency); err != nil || v.Kind != yaml.ScalarNode {
			return s, fmt.Errorf("field concurrency: line %d: a whole number", v.Line)
		}
	}
	if err := optDuration(f, "timeout", false, &s.Timeout); err != nil {
		return s, err
	}
	if err := optBool(f, "rerun", &s.Rerun); err != nil {
		return s, err
	}
	if s.Overrides, err = decodeOverrides(f["overrides"]); err != nil {
		return s, err
	}
	if s.Cwd != "" && !filepath.IsAbs(s.Cwd) {
		s.Cwd = filepath.Join(dir, s.Cwd)
	}
	if s.Cwd == "" && len(s.Command) > 0 {
		s.Cwd = dir
	}
	return s, nil
}

// decodeOverrides decodes a server's overrides: upstream tool name → Override.
func decodeOverrides(n *yaml.Node) (map[string]Override, error) {
	if n == nil {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("field overrides: line %d: an object of tool names to overrides, not a %s", n.Line, yamlnode.KindName(n))
	}
	out := map[string]Override{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		tool := n.Content[i].Value
		o, err := decodeOverride(n.Content[i+1])
		if err != nil {
			return nil, fmt.Errorf("field overrides: %s: %w", tool, err)
		}
		out[tool] = o
	}
	return out, nil
}

func decodeOverride(n *yaml.Node) (Override, error) {
	var o Override
	f, err := fieldsOf(n, overrideKeys)
	if err != nil {
		return o, err
	}
	var policy string
	if err := optScalar(f, "policy", &policy); err != nil {
		return o, err
	}
	o.Policy = worker.Policy(policy)
	if err := optScalar(f, "queue", &o.Queue); err != nil {
		return o, err
	}
	for _, x := range []struct {
		key string
		to  *time.Duration
	}{{"ttl", &o.TTL}, {"pollInterval", &o.PollInterval}, {"timeout", &o.Timeout}} {
		if err := optDuration(f, x.key, x.key == "ttl", x.to); err != nil {
			return o, err
		}
	}
	if v := f["rerun"]; v != nil {
		var b bool
		if err := optBool(f, "rerun", &b); err != nil {
			return o, err
		}
		o.Rerun = &b
	}
	if v := f["price"]; v != nil {
		p, err := decodePrice(v)
		if err != nil {
			return o, fmt.Errorf("field price: %w", err)
		}
		o.Price = p
	}
	return o, nil
}

// decodePrice decodes a price object strictly (base, perArgument, max).
func decodePrice(v *yaml.Node) (*proto.Price, error) {
	var raw any
	if err := v.Decode(&raw); err != nil {
		return nil, err
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("line %d: %v", v.Line, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	p := &proto.Price{}
	if err := dec.Decode(p); err != nil {
		return nil, fmt.Errorf("line %d: an object of base, perArgument and max (integers): %v", v.Line, err)
	}
	return p, nil
}
