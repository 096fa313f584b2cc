package taskstate_test

// Issue 13 (tenant isolation of resources), store side: a listing reads
// only the fields its answer needs.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// TestListTasksSummaryOnly: ListTasks records carry the summary a listing
// shows and none of the arguments or the result, so a page of tasks with
// large results costs the front end the page, not the results (finding 5).
func TestListTasksSummaryOnly(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		big := `{"content":[{"type":"text","text":"` + strings.Repeat("x", 64<<10) + `"}]}`
		ref := e.create(t, taskstate.CreateParams{Arguments: json.RawMessage(`{"secret":"` + strings.Repeat("a", 1024) + `"}`),
			TTLMs: ttl(60_000), PollIntervalMs: 250})
		attempt := e.claim(t, ref)
		if err := e.s.Finish(ctx(t), ref, attempt, taskstate.Outcome{Status: proto.StatusCompleted,
			Result: json.RawMessage(big), StatusMessage: "done"}); err != nil {
			t.Fatal(err)
		}
		res, err := e.s.ListTasks(ctx(t), principal, taskstate.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tasks) != 1 {
			t.Fatalf("listed %d tasks, want 1", len(res.Tasks))
		}
		r := res.Tasks[0]
		if r.Result != nil || r.Arguments != nil || r.Checkpoint != nil {
			t.Errorf("a listing loaded result (%d bytes), arguments (%d bytes), checkpoint (%d bytes)",
				len(r.Result), len(r.Arguments), len(r.Checkpoint))
		}
		want := e.get(t, ref).Task()
		if got := r.Task(); got.Status != want.Status || got.StatusMessage != want.StatusMessage ||
			got.CreatedAt != want.CreatedAt || got.LastUpdatedAt != want.LastUpdatedAt ||
			*got.TTLMs != *want.TTLMs || *got.PollIntervalMs != *want.PollIntervalMs {
			t.Errorf("listed %+v, tasks/get shows %+v", got, want)
		}
	})
}
