package worker

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaFor infers the JSON Schema of t with jsonschema-go (the `json` tag
// names a property and omitempty makes it optional; a `jsonschema` tag is
// its description) and then applies each field's `mcpq` tag, which states
// what jsonschema-go's tags cannot: bounds and enums, e.g.
//
//	Seconds int    `json:"seconds" jsonschema:"how long" mcpq:"minimum=1,maximum=3600"`
//	Speed   string `json:"speed,omitempty" mcpq:"enum=slow|fast"`
//
// Keys: minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength,
// maxLength, minItems, maxItems, enum (values split on |), format, title.
func schemaFor(t reflect.Type) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, err
	}
	if err := applyTags(t, s, map[reflect.Type]bool{}); err != nil {
		return nil, err
	}
	return s, nil
}

// applyTags walks t's struct fields beside s's properties.
func applyTags(t reflect.Type, s *jsonschema.Schema, seen map[reflect.Type]bool) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if s.Items != nil {
			return applyTags(t.Elem(), s.Items, seen)
		}
		return nil
	case reflect.Map:
		if s.AdditionalProperties != nil {
			return applyTags(t.Elem(), s.AdditionalProperties, seen)
		}
		return nil
	case reflect.Struct:
	default:
		return nil
	}
	if seen[t] {
		return nil
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := jsonName(f)
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			// An embedded struct's fields are the parent's properties.
			if err := applyTags(f.Type, s, seen); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		ps := s.Properties[name]
		if ps == nil {
			continue
		}
		if tag, ok := f.Tag.Lookup("mcpq"); ok {
			if err := applyTag(ps, f.Type, tag); err != nil {
				return fmt.Errorf("field %s.%s: %w", t, f.Name, err)
			}
		}
		if err := applyTags(f.Type, ps, seen); err != nil {
			return err
		}
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	name, _, _ := strings.Cut(tag, ",")
	if f.Anonymous && tag == "" {
		return ""
	}
	return name
}

// applyTag applies one `mcpq` tag to the property schema ps of a field of type t.
func applyTag(ps *jsonschema.Schema, t reflect.Type, tag string) error {
	for part := range strings.SplitSeq(tag, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("mcpq tag %q: want key=value", part)
		}
		var err error
		switch key {
		case "minimum":
			ps.Minimum, err = float(val)
		case "maximum":
			ps.Maximum, err = float(val)
		case "exclusiveMinimum":
			ps.ExclusiveMinimum, err = float(val)
		case "exclusiveMaximum":
			ps.ExclusiveMaximum, err = float(val)
		case "minLength":
			ps.MinLength, err = count(val)
		case "maxLength":
			ps.MaxLength, err = count(val)
		case "minItems":
			ps.MinItems, err = count(val)
		case "maxItems":
			ps.MaxItems, err = count(val)
		case "format":
			ps.Format = val
		case "title":
			ps.Title = val
		case "enum":
			ps.Enum, err = enumValues(t, val)
		default:
			return fmt.Errorf("mcpq tag: unknown key %q", key)
		}
		if err != nil {
			return fmt.Errorf("mcpq tag %s: %w", key, err)
		}
	}
	return nil
}

func float(s string) (*float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("%q is not a number", s)
	}
	return &f, nil
}

func count(s string) (*int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%q is not a count", s)
	}
	return &n, nil
}

// enumValues parses "a|b|c" as values of t's JSON type.
func enumValues(t reflect.Type, list string) ([]any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []any
	for v := range strings.SplitSeq(list, "|") {
		switch t.Kind() {
		case reflect.String:
			out = append(out, v)
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			var x any
			if err := json.Unmarshal([]byte(v), &x); err != nil {
				return nil, fmt.Errorf("%q is not a %s", v, t)
			}
			out = append(out, x)
		default:
			return nil, fmt.Errorf("enum on a %s field", t)
		}
	}
	return out, nil
}

// objectSchema infers the schema of t, which must describe a JSON object
// (a struct or a map with string keys), and returns it as JSON.
func objectSchema(t reflect.Type, what string) (json.RawMessage, error) {
	s, err := schemaFor(t)
	if err != nil {
		return nil, fmt.Errorf("%s schema: %w", what, err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("%s type %s is not a struct or a map with string keys", what, t)
	}
	// Resolving checks the schema is one a validator can use.
	if _, err := s.Resolve(nil); err != nil {
		return nil, fmt.Errorf("%s schema: %w", what, err)
	}
	return json.Marshal(s)
}
