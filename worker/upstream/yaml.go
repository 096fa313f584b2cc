package upstream

import (
	"fmt"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mcpq/mcpq/internal/yamlnode"
)

// The small decoders of load.go: each names the field and the line.

func optScalar(f map[string]*yaml.Node, key string, to *string) error {
	if v := f[key]; v != nil {
		if err := yamlnode.Scalar(v, to); err != nil {
			return fmt.Errorf("field %s: %w", key, err)
		}
	}
	return nil
}

func optList(f map[string]*yaml.Node, key string, to *[]string) error {
	v := f[key]
	if v == nil {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		return fmt.Errorf("field %s: line %d: a list of strings, not a %s", key, v.Line, yamlnode.KindName(v))
	}
	for _, item := range v.Content {
		var a string
		if err := yamlnode.Scalar(item, &a); err != nil {
			return fmt.Errorf("field %s: %w", key, err)
		}
		*to = append(*to, a)
	}
	return nil
}

// optMap decodes an object of strings; with env, "${NAME}" in a value is
// replaced by the variable (unset: an error).
func optMap(f map[string]*yaml.Node, key string, env Lookup) (map[string]string, error) {
	v := f[key]
	if v == nil {
		return nil, nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("field %s: line %d: an object of names to strings, not a %s", key, v.Line, yamlnode.KindName(v))
	}
	out := map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		name := v.Content[i].Value
		var val string
		if err := yamlnode.Scalar(v.Content[i+1], &val); err != nil {
			return nil, fmt.Errorf("field %s: %s: %w", key, name, err)
		}
		if strings.ContainsAny(name, "=\x00\r\n") || name == "" || strings.ContainsAny(val, "\x00") {
			return nil, fmt.Errorf("field %s: line %d: %q is not a name", key, v.Content[i].Line, name)
		}
		if env != nil {
			var missing []string
			val = os.Expand(val, func(n string) string {
				s, ok := env(n)
				if !ok {
					missing = append(missing, n)
				}
				return s
			})
			if len(missing) > 0 {
				return nil, fmt.Errorf("field %s: %s: line %d: environment variable %s is not set", key, name, v.Content[i].Line, strings.Join(missing, ", "))
			}
			if strings.ContainsAny(val, "\r\n") {
				return nil, fmt.Errorf("field %s: %s: the value holds a line break", key, name)
			}
		}
		out[name] = val
	}
	return out, nil
}

func optDuration(f map[string]*yaml.Node, key string, unlimited bool, to *time.Duration) error {
	v := f[key]
	if v == nil {
		return nil
	}
	var s string
	if err := yamlnode.Scalar(v, &s); err != nil {
		return fmt.Errorf("field %s: %w", key, err)
	}
	if unlimited && s == "unlimited" {
		*to = -1
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("field %s: line %d: %q is not a duration (like 30s, 5m or 2h)", key, v.Line, s)
	}
	*to = d
	return nil
}

func optBool(f map[string]*yaml.Node, key string, to *bool) error {
	v := f[key]
	if v == nil {
		return nil
	}
	if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
		return fmt.Errorf("field %s: line %d: true or false, not %q", key, v.Line, v.Value)
	}
	return v.Decode(to)
}
