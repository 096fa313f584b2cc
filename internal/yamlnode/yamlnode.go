// Package yamlnode reads the scalar fields of a tools file (worker/command
// and worker/upstream load the same file) with errors that name the line.
package yamlnode

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Scalar decodes a scalar node as its text; a list, an object or null is
// an error naming the node's line and what it is.
func Scalar(n *yaml.Node, to *string) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return fmt.Errorf("line %d: a string, not a %s", n.Line, KindName(n))
	}
	*to = n.Value
	return nil
}

// KindName names a node's kind for errors.
func KindName(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.SequenceNode:
		return "list"
	case n.Kind == yaml.MappingNode:
		return "object"
	case n.Tag == "!!null":
		return "null"
	case n.Kind == yaml.AliasNode:
		return "alias"
	}
	return "scalar"
}
