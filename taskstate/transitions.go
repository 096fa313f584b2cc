package taskstate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpq/mcpq/proto"
)

// StatusNew is the pseudo status of a task that does not exist yet.
const StatusNew proto.TaskStatus = ""

// Transitions is the one transition table: from → allowed targets. The Lua
// scripts get it rendered as a table (luaTransitions) and the tests walk it.
// Terminal states have no row, so nothing leaves them.
var Transitions = map[proto.TaskStatus][]proto.TaskStatus{
	StatusNew:                 {proto.StatusWorking},
	proto.StatusWorking:       {proto.StatusInputRequired, proto.StatusCompleted, proto.StatusFailed, proto.StatusCancelled},
	proto.StatusInputRequired: {proto.StatusWorking, proto.StatusCompleted, proto.StatusFailed, proto.StatusCancelled},
}

// AllStatuses lists every status including StatusNew, for exhaustive tests.
var AllStatuses = []proto.TaskStatus{StatusNew, proto.StatusWorking, proto.StatusInputRequired,
	proto.StatusCompleted, proto.StatusFailed, proto.StatusCancelled}

// Allowed reports whether the table permits from → to.
func Allowed(from, to proto.TaskStatus) bool { return slices.Contains(Transitions[from], to) }

// luaTransitions renders Transitions as the Lua prelude every script starts with.
func luaTransitions() string {
	var b strings.Builder
	b.WriteString("local TRANSITIONS = {")
	for _, from := range AllStatuses {
		fmt.Fprintf(&b, "[%q]={", string(from))
		for _, to := range Transitions[from] {
			fmt.Fprintf(&b, "[%q]=true,", string(to))
		}
		b.WriteString("},")
	}
	b.WriteString("}\n")
	return b.String()
}
