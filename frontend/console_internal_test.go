package frontend

import "testing"

// TestParseProgress: the progress a status message says, as the console
// shows it (docs/dashboard.md, "My tasks"); the dashboard's PROGRESS
// (frontend/dashboard/app.js) is the same pattern.
func TestParseProgress(t *testing.T) {
	for _, c := range []struct {
		msg         string
		done, total float64
		none        bool
	}{
		{msg: "frame 3 of 10", done: 3, total: 10},
		{msg: "3/10", done: 3, total: 10},
		{msg: "long: 12s of 600s", done: 12, total: 600},
		{msg: "2MB/8MB", done: 2, total: 8},
		{msg: "40%", done: 40, total: 100},
		{msg: "140%", done: 100, total: 100},
		{msg: "11 of 10", none: true},
		{msg: "Running", none: true},
	} {
		p := parseProgress(c.msg)
		if c.none != (p == nil) || (p != nil && (p.Done != c.done || p.Total != c.total)) {
			t.Errorf("parseProgress(%q) = %+v, want %v of %v (none %v)", c.msg, p, c.done, c.total, c.none)
		}
	}
}
