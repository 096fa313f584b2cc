package conformance

import (
	"testing"
	"time"
)

// TestSlowComputeProgressMessage: the statusMessage names the label only
// when the call gave one.
func TestSlowComputeProgressMessage(t *testing.T) {
	for _, c := range []struct {
		label string
		want  string
	}{
		{"", "1s of 3s"},
		{"job", "job: 1s of 3s"},
	} {
		if got := progressMessage(c.label, time.Second, 3); got != c.want {
			t.Errorf("progressMessage(%q) = %q, want %q", c.label, got, c.want)
		}
	}
}
