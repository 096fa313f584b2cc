package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// placeholder is "{name}" inside an argv item; an item that is exactly one
// is substituted, an item that merely contains one is refused.
var placeholder = regexp.MustCompile(`\{[A-Za-z_][A-Za-z0-9_-]*\}`)

// placeholderName returns the argument an argv item stands for, if the item
// is exactly one placeholder.
func placeholderName(item string) (string, bool) {
	if len(item) > 2 && placeholder.FindString(item) == item {
		return item[1 : len(item)-1], true
	}
	return "", false
}

// checkTemplate validates an argv template: a literal program first, then
// items that are literals or whole placeholders naming a property of the
// input schema (props; nil when the schema names none, and then any name
// goes).
func checkTemplate(argv []string, props map[string]bool) error {
	if len(argv) == 0 {
		return errors.New("empty: it needs at least the program")
	}
	if argv[0] == "" {
		return errors.New("item 0 (the program) is empty")
	}
	for i, item := range argv {
		if strings.ContainsRune(item, 0) {
			return fmt.Errorf("item %d holds a NUL byte", i)
		}
		name, whole := placeholderName(item)
		switch {
		case whole && i == 0:
			return fmt.Errorf("item 0 (the program) is the placeholder %s; the program must be fixed", item)
		case whole && props != nil && !props[name]:
			return fmt.Errorf("item %d: placeholder %s names no property of inputSchema", i, item)
		case whole:
		case placeholder.MatchString(item):
			return fmt.Errorf("item %d %q embeds the placeholder %s in a larger string; "+
				"a placeholder must be a whole item (write \"--flag\", \"{name}\" as two items)",
				i, item, placeholder.FindString(item))
		}
	}
	return nil
}

// expand substitutes args into a template checkTemplate accepted. Each
// placeholder becomes exactly one argv item, whatever its value holds
// (spaces, newlines, quotes, shell metacharacters, a leading dash, nothing
// at all): a string argument is passed as its text, any other value as its
// JSON text (3, 2.5, true, {"a":1}). A placeholder whose argument is absent
// or null is left out (its item only: a literal flag before it stays).
func expand(argv []string, args map[string]json.RawMessage) ([]string, error) {
	out := make([]string, 0, len(argv))
	for _, item := range argv {
		name, ok := placeholderName(item)
		if !ok {
			out = append(out, item)
			continue
		}
		raw, present := args[name]
		if !present || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		v, err := argText(raw)
		if err != nil {
			return nil, fmt.Errorf("argument %q: %w", name, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// argText is the argv item for one argument's JSON value.
func argText(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if strings.ContainsRune(s, 0) {
			return "", errors.New("holds a NUL byte, which no program argument can")
		}
		return s, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", fmt.Errorf("not JSON: %v", err)
	}
	return buf.String(), nil
}
