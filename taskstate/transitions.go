package taskstate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpq/mcpq/proto"
)

// StatusNew is the pseudo status of a task that does not exist yet.
const StatusNew proto.TaskStatus = ""

// transitions is the one transition table: from → allowed targets. The
// Lua scripts get it rendered as a table (luaTransitions) and the tests
// walk it (Transitions). Terminal states have no row, so nothing leaves them.
var transitions = map[proto.TaskStatus][]proto.TaskStatus{
	StatusNew:                 {proto.StatusWorking},
	proto.StatusWorking:       {proto.StatusInputRequired, proto.StatusCompleted, proto.StatusFailed, proto.StatusCancelled},
	proto.StatusInputRequired: {proto.StatusWorking, proto.StatusCompleted, proto.StatusFailed, proto.StatusCancelled},
}

// allStatuses is every status, StatusNew included.
var allStatuses = []proto.TaskStatus{StatusNew, proto.StatusWorking, proto.StatusInputRequired,
	proto.StatusCompleted, proto.StatusFailed, proto.StatusCancelled}

// Transitions returns the one transition table, which every script
// checks before it changes a task: from → the statuses allowed next.
// Terminal statuses have no row, so nothing leaves them. The map is a
// copy: changing it changes nothing.
func Transitions() map[proto.TaskStatus][]proto.TaskStatus {
	out := make(map[proto.TaskStatus][]proto.TaskStatus, len(transitions))
	for from, tos := range transitions {
		out[from] = slices.Clone(tos)
	}
	return out
}

// allowed reports whether the table permits from → to.
func allowed(from, to proto.TaskStatus) bool { return slices.Contains(transitions[from], to) }

// luaTransitions renders the table as the Lua prelude every script starts with.
func luaTransitions() string {
	var b strings.Builder
	b.WriteString("local TRANSITIONS = {")
	for _, from := range allStatuses {
		fmt.Fprintf(&b, "[%q]={", string(from))
		for _, to := range transitions[from] {
			fmt.Fprintf(&b, "[%q]=true,", string(to))
		}
		b.WriteString("},")
	}
	b.WriteString("}\n")
	return b.String()
}
