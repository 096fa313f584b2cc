package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

// fileKeys are the keys of one tool in a tools file.
var fileKeys = []string{"name", "title", "description", "inputSchema", "outputSchema", "command", "dir", "scratch", "env",
	"timeout", "grace", "policy", "ttl", "pollInterval", "queue", "price", "scopes", "allowNetworks", "links"}

// Load reads a tools file (YAML, or JSON, which YAML reads too) and returns
// its tools, ready for worker.New or Worker.AddTool. The file is an object
// with one key, "tools", a list of tools; each tool has the keys of Spec
// (docs/tools.md, "Command tools"): durations are strings such as "30s" or
// "5m" ("ttl" may also be "unlimited"), and a relative "dir" is relative to
// the file's folder, which is also the default. An error names the file,
// the line, the tool and the field. log receives the handlers' logs (nil:
// slog.Default()).
func Load(path string, log *slog.Logger) ([]worker.Tool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tools file: %w", err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("tools file: %w", err)
	}
	return parse(data, path, dir, log)
}

// parse reads a tools file's bytes; name is the file for errors and dir
// the folder relative paths start from.
func parse(data []byte, name, dir string, log *slog.Logger) ([]worker.Tool, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty: it needs a \"tools\" list", name)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: the file is an object with a \"tools\" list", name, root.Line)
	}
	var list *yaml.Node
	servers := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "tools":
			list = v
		case "servers": // upstream MCP servers: worker/upstream reads them
			servers = true
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q (the file has \"tools\" and \"servers\")", name, k.Line, k.Value)
		}
	}
	if list == nil && servers {
		return nil, nil
	}
	if list == nil || list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		line := root.Line
		if list != nil {
			line = list.Line
		}
		return nil, fmt.Errorf("%s:%d: \"tools\" must be a list of at least one tool", name, line)
	}
	var tools []worker.Tool
	seen := map[string]bool{}
	for i, n := range list.Content {
		where := fmt.Sprintf("%s:%d: tool %d", name, n.Line, i+1)
		spec, err := decodeSpec(n, dir)
		if spec.Name != "" {
			where = fmt.Sprintf("%s:%d: tool %q", name, n.Line, spec.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if seen[spec.Name] {
			return nil, fmt.Errorf("%s: declared twice", where)
		}
		seen[spec.Name] = true
		spec.Logger = log
		if err := spec.check(); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		t, err := New(spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// decodeSpec decodes one tool of a tools file. The name is decoded first,
// so errors about later fields can name the tool.
func decodeSpec(n *yaml.Node, dir string) (Spec, error) {
	var s Spec
	if n.Kind != yaml.MappingNode {
		return s, errors.New("not an object")
	}
	fields := map[string]*yaml.Node{}
	var keyErr error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		switch {
		case keyErr != nil:
		case !slices.Contains(fileKeys, k):
			keyErr = fmt.Errorf("line %d: unknown field %q (known: %s)", n.Content[i].Line, k, strings.Join(fileKeys, ", "))
		case fields[k] != nil:
			keyErr = fmt.Errorf("line %d: field %s given twice", n.Content[i].Line, k)
		}
		fields[k] = n.Content[i+1]
	}
	if fields["name"] == nil {
		return s, errors.New("field name: missing")
	}
	if err := yamlnode.Scalar(fields["name"], &s.Name); err != nil {
		return s, fmt.Errorf("field name: %w", err)
	}
	if keyErr != nil {
		return s, keyErr
	}
	if fields["command"] == nil {
		return s, errors.New("field command: missing (the program and its arguments, a list)")
	}
	for _, f := range []struct {
		key string
		to  *string
	}{{"title", &s.Title}, {"description", &s.Description}, {"dir", &s.Dir}, {"scratch", &s.Scratch}, {"queue", &s.Queue}} {
		if v := fields[f.key]; v != nil {
			if err := yamlnode.Scalar(v, f.to); err != nil {
				return s, fmt.Errorf("field %s: %w", f.key, err)
			}
		}
	}
	if v := fields["policy"]; v != nil {
		var p string
		if err := yamlnode.Scalar(v, &p); err != nil {
			return s, fmt.Errorf("field policy: %w", err)
		}
		s.Policy = worker.Policy(p)
	}
	if v := fields["command"]; v != nil {
		var err error
		if s.Command, err = stringList(v, "a list of strings", " (no shell parses it)"); err != nil {
			return s, fmt.Errorf("field command: %w", err)
		}
	}
	if v := fields["env"]; v != nil {
		if v.Kind != yaml.MappingNode {
			return s, fmt.Errorf("field env: line %d: an object of names to strings, not a %s", v.Line, yamlnode.KindName(v))
		}
		s.Env = map[string]string{}
		for i := 0; i+1 < len(v.Content); i += 2 {
			var val string
			if err := yamlnode.Scalar(v.Content[i+1], &val); err != nil {
				return s, fmt.Errorf("field env: %s: %w", v.Content[i].Value, err)
			}
			s.Env[v.Content[i].Value] = val
		}
	}
	for _, f := range []struct {
		key string
		to  *json.RawMessage
	}{{"inputSchema", &s.InputSchema}, {"outputSchema", &s.OutputSchema}} {
		if v := fields[f.key]; v != nil {
			var schema any
			if err := v.Decode(&schema); err != nil {
				return s, fmt.Errorf("field %s: %w", f.key, err)
			}
			b, err := json.Marshal(schema)
			if err != nil {
				return s, fmt.Errorf("field %s: line %d: not JSON-compatible: %v", f.key, v.Line, err)
			}
			*f.to = b
		}
	}
	if v := fields["scopes"]; v != nil {
		if v.Kind != yaml.SequenceNode {
			return s, fmt.Errorf("field scopes: line %d: a list of strings, not a %s", v.Line, yamlnode.KindName(v))
		}
		for _, item := range v.Content {
			var sc string
			if err := yamlnode.Scalar(item, &sc); err != nil || sc == "" || strings.ContainsAny(sc, " \t\"\\") {
				return s, fmt.Errorf("field scopes: line %d: a scope is a non-empty string without spaces or quotes", item.Line)
			}
			s.Scopes = append(s.Scopes, sc)
		}
	}
	if v := fields["links"]; v != nil {
		var err error
		if s.Links, err = stringList(v, "a list of file name patterns", ""); err != nil {
			return s, fmt.Errorf("field links: %w", err)
		}
	}
	if v := fields["allowNetworks"]; v != nil {
		nets, err := allowNetworks(v)
		if err != nil {
			return s, fmt.Errorf("field allowNetworks: %w", err)
		}
		s.AllowNetworks = nets
	}
	if v := fields["price"]; v != nil {
		var raw any
		if err := v.Decode(&raw); err != nil {
			return s, fmt.Errorf("field price: %w", err)
		}
		b, err := json.Marshal(raw)
		if err != nil {
			return s, fmt.Errorf("field price: line %d: %v", v.Line, err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		s.Price = &proto.Price{}
		if err := dec.Decode(s.Price); err != nil {
			return s, fmt.Errorf("field price: line %d: an object of base, perArgument and max (integers): %v", v.Line, err)
		}
		if err := s.Price.Validate(); err != nil {
			return s, fmt.Errorf("field price: line %d: %v", v.Line, err)
		}
	}
	for _, f := range []struct {
		key string
		to  *time.Duration
	}{{"timeout", &s.Timeout}, {"grace", &s.Grace}, {"ttl", &s.TTL}, {"pollInterval", &s.PollInterval}} {
		if v := fields[f.key]; v != nil {
			if err := duration(v, f.key == "ttl", f.to); err != nil {
				return s, fmt.Errorf("field %s: %w", f.key, err)
			}
		}
	}
	if raw := s.Scratch; raw != "" {
		// The one field read with $VARS expanded: where the shared folder
		// is mounted differs between fleets.
		if s.Scratch = os.ExpandEnv(raw); s.Scratch == "" {
			return s, fmt.Errorf("field scratch: %q expands to nothing (its variables are not set)", raw)
		}
	}
	if s.Scratch != "" && !filepath.IsAbs(s.Scratch) {
		s.Scratch = filepath.Join(dir, s.Scratch)
	}
	switch {
	case s.Dir == "":
		s.Dir = dir
	case !filepath.IsAbs(s.Dir):
		s.Dir = filepath.Join(dir, s.Dir)
	}
	return s, nil
}

// stringList decodes a list of strings; what names the list and why is
// added to the error for a node that is not one.
func stringList(v *yaml.Node, what, why string) ([]string, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: %s, not a %s%s", v.Line, what, yamlnode.KindName(v), why)
	}
	out := make([]string, 0, len(v.Content))
	for _, item := range v.Content {
		var a string
		if err := yamlnode.Scalar(item, &a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// duration decodes a duration such as "30s"; "unlimited" is -1 where
// allowed (a TTL).
func duration(n *yaml.Node, unlimited bool, to *time.Duration) error {
	var s string
	if err := yamlnode.Scalar(n, &s); err != nil {
		return err
	}
	if unlimited && s == "unlimited" {
		*to = -1
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		if unlimited {
			return fmt.Errorf("line %d: %q is not a duration (like 30s, 5m or 2h) or \"unlimited\"", n.Line, s)
		}
		return fmt.Errorf("line %d: %q is not a duration (like 30s, 5m or 2h)", n.Line, s)
	}
	*to = d
	return nil
}
