package frontend

import (
	"encoding/json"
	"testing"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// TestResolveSchemasOncePerText: a catalog reload resolves only schema
// texts it has not resolved before; an unusable schema checks nothing.
func TestResolveSchemasOncePerText(t *testing.T) {
	def := func(name, schema string) catalog.Entry {
		return catalog.Entry{Tool: proto.Tool{Name: name, InputSchema: json.RawMessage(schema)}}
	}
	const a = `{"type":"object","properties":{"n":{"type":"integer"}}}`
	const remote = `{"$ref":"https://schemas.example.com/args.json"}`
	defs := []catalog.Entry{def("one", a), def("two", a), def("far", remote), def("bad", `{"type":7}`)}
	byKey, bySchema := resolveSchemas(defs, nil)
	if byKey[defs[0].Key()] == nil || byKey[defs[0].Key()] != byKey[defs[1].Key()] {
		t.Fatalf("tools with the same schema text got %p and %p", byKey[defs[0].Key()], byKey[defs[1].Key()])
	}
	for _, d := range defs[2:] {
		if rs, ok := byKey[d.Key()]; ok {
			t.Errorf("%s: unusable schema resolved to %v", d.Tool.Name, rs)
		}
	}
	again, _ := resolveSchemas([]catalog.Entry{def("three", a)}, bySchema)
	if again[defs[0].Key()] != nil || again[catalog.EntryKey(catalog.KindTool, "three")] != byKey[defs[0].Key()] {
		t.Errorf("reload resolved the unchanged schema again")
	}
}
