// Package exampletest holds what the tests of the tool families in
// examples/ (media, ocr, ingest) share: skipping without the programs a
// family runs, and waiting for a long task's end.
package exampletest

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/proto"
)

// Need skips t when one of progs is not on PATH, naming install (how to
// get them); with MCPQ_REQUIRE_MEDIA set (scripts/test installs them) a
// missing program fails t instead.
func Need(t *testing.T, install string, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("MCPQ_REQUIRE_MEDIA") != "" {
				t.Fatalf("%s is not installed (scripts/test installs it)", p)
			}
			t.Skipf("%s is not installed (%s)", p, install)
		}
	}
}

// Finish waits for run's end, longer than mcpqtest.Bound: encoding, OCR
// or a crawl on a loaded 2-core machine is slow, and no bound is the
// tests' subject.
func Finish(t *testing.T, run *mcpqtest.Run) *proto.CallToolResult {
	t.Helper()
	for end := time.Now().Add(3 * time.Minute); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if st := run.State(t); st.Status != proto.StatusWorking {
			break
		}
	}
	return run.Result(t)
}
