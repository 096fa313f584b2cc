package upstream

import (
	"testing"
)

// TestExampleFileLoads keeps examples/upstream/everything.yaml valid.
func TestExampleFileLoads(t *testing.T) {
	specs, err := Load("../../examples/upstream/everything.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 1 || specs[0].Name != "everything" || !specs[0].selects("trigger-long-running-operation") || specs[0].selects("toggle-simulated-logging") {
		t.Fatalf("specs %+v", specs)
	}
}
