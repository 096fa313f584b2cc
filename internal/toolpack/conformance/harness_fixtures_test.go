package conformance_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/internal/toolpack/conformance"
	"github.com/mcpq/mcpq/internal/workertest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
	"github.com/mcpq/mcpq/worker"
)

// fxBound is the failure bound of every wait in the fixture tests: it only
// decides how long a broken build takes to fail, never whether one passes.
const fxBound = workertest.Bound

// Client capabilities the fixture tests create tasks with.
const (
	capsNone = `{}`
	capsAll  = `{"elicitation":{},"sampling":{},"roots":{"listChanged":true},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
)

// fxEnv is a real worker serving the whole pack (Register) on miniredis,
// driven the way the front end drives it (internal/workertest).
type fxEnv struct {
	*workertest.Env
	rdb   redis.UniversalClient
	store *taskstate.Store
	hub   *events.Hub
}

func fxStart(t *testing.T) *fxEnv {
	t.Helper()
	b := redistest.Mini(t)
	env := workertest.Start(t, b, func(ctx context.Context, cfg worker.Config) (*worker.Worker, error) {
		cfg.Logger = slog.New(slog.DiscardHandler)
		w, err := worker.New(cfg)
		if err != nil {
			return nil, err
		}
		return w, conformance.Register(ctx, w)
	})
	return &fxEnv{Env: env, rdb: b.Client, store: env.Store, hub: env.Hub}
}

// fxTask is one task the test created, with what its events carried.
type fxTask struct {
	*workertest.Task
	ref taskstate.Ref
	sub *events.Subscription
	// notes are the notifications (progress, log) the worker published.
	notes []proto.Request
}

// run creates a task for the catalog entry key (a tool name, or
// catalog.EntryKey of a prompt, resource, template or the completer),
// subscribes to its events and enqueues its job.
func (e *fxEnv) run(t *testing.T, key, args, caps string) *fxTask {
	t.Helper()
	tk := e.Submit(t, taskstate.CreateParams{Principal: "conformance", Tool: key,
		Arguments: json.RawMessage(args), Capabilities: json.RawMessage(caps)}, "")
	return &fxTask{Task: tk, ref: tk.Ref, sub: tk.Sub}
}

// enqueue puts the task's job on the queue; resume > 0 numbers a
// resumption after input, as the front end does.
func (e *fxEnv) enqueue(t *testing.T, tk *fxTask, resume int64) {
	t.Helper()
	e.Enqueue(t, tk.Task, "", resume)
}

// await reads the record now and after every event until ok accepts it,
// keeping the notifications the events carried.
func (e *fxEnv) await(t *testing.T, tk *fxTask, what string, ok func(*taskstate.Record) bool) *taskstate.Record {
	t.Helper()
	return e.Wait(t, tk.Task, what, ok, func(ev string) { tk.note(t, ev) })
}

// note keeps ev when it is a notification.
func (tk *fxTask) note(t *testing.T, ev string) {
	t.Helper()
	raw := events.Decode(ev).Notification
	if raw == "" {
		return
	}
	var n proto.Request
	if err := json.Unmarshal([]byte(raw), &n); err != nil {
		t.Fatalf("notification %s: %v", raw, err)
	}
	tk.notes = append(tk.notes, n)
}

// drain reads the task's events up to the one announcing its terminal
// status, keeping the notifications published before it, and returns the
// final record. Unlike terminal it sees every notification of a task that
// ended before the test looked.
func (e *fxEnv) drain(t *testing.T, tk *fxTask) *taskstate.Record {
	t.Helper()
	timeout := time.NewTimer(fxBound)
	defer timeout.Stop()
	for {
		select {
		case ev := <-tk.sub.C:
			decoded := events.Decode(ev)
			if decoded.Notification != "" {
				tk.note(t, ev)
				continue
			}
			if decoded.Status.Terminal() {
				rec, err := e.store.Get(context.Background(), tk.ref)
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				return rec
			}
		case <-timeout.C:
			t.Fatalf("no terminal status event within %v", fxBound)
		}
	}
}

// terminal waits for the task to end.
func (e *fxEnv) terminal(t *testing.T, tk *fxTask) *taskstate.Record {
	t.Helper()
	return e.await(t, tk, "terminal status", func(r *taskstate.Record) bool { return r.Status.Terminal() })
}

// parked waits for the task to ask for exactly keys (input_required) and
// returns the pending requests by key.
func (e *fxEnv) parked(t *testing.T, tk *fxTask, keys ...string) map[string]proto.InputRequest {
	t.Helper()
	want := append([]string(nil), keys...)
	sort.Strings(want)
	rec := e.await(t, tk, "input_required with "+strings.Join(want, ","), func(r *taskstate.Record) bool {
		return r.Status.Terminal() || (r.Status == proto.StatusInputRequired && len(r.InputRequests) == len(want))
	})
	if rec.Status != proto.StatusInputRequired {
		t.Fatalf("ended %s (error %+v, result %s) instead of asking for %v", rec.Status, rec.Error, rec.Result, want)
	}
	got := make([]string, 0, len(rec.InputRequests))
	reqs := map[string]proto.InputRequest{}
	for k, raw := range rec.InputRequests {
		got = append(got, k)
		var r proto.InputRequest
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("input request %s = %s: %v", k, raw, err)
		}
		reqs[k] = r
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("asks for %v, want %v", got, want)
	}
	return reqs
}

// answer delivers answers (as tasks/update does) and, when that resumed
// the task, enqueues its job again. It reports whether it resumed.
func (e *fxEnv) answer(t *testing.T, tk *fxTask, answers map[string]string) bool {
	t.Helper()
	raw := make(map[string]json.RawMessage, len(answers))
	for k, v := range answers {
		raw[k] = json.RawMessage(v)
	}
	res, err := e.store.Answer(context.Background(), tk.ref, raw)
	if err != nil {
		t.Fatalf("Answer: %v", err)
	}
	if res.Applied != int64(len(answers)) {
		t.Fatalf("Answer applied %d of %d answers", res.Applied, len(answers))
	}
	if res.Resume > 0 {
		e.enqueue(t, tk, res.Resume)
	}
	return res.Resume > 0
}

// toolResult decodes a completed task's CallToolResult.
func toolResult(t *testing.T, rec *taskstate.Record) proto.CallToolResult {
	t.Helper()
	if rec.Status != proto.StatusCompleted {
		t.Fatalf("status %s (error %+v), want completed", rec.Status, rec.Error)
	}
	var res proto.CallToolResult
	if err := json.Unmarshal(rec.Result, &res); err != nil {
		t.Fatalf("result %s: %v", rec.Result, err)
	}
	if res.ResultType != proto.ResultComplete {
		t.Errorf("resultType %q, want %q", res.ResultType, proto.ResultComplete)
	}
	return res
}

// onlyText is the text of a result made of one text block.
func onlyText(t *testing.T, res proto.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 || res.Content[0].Type != "text" {
		t.Fatalf("content %+v, want one text block", res.Content)
	}
	return res.Content[0].Text
}

// failedWith checks that the task failed with a JSON-RPC error of code and
// returns the error's data as JSON.
func failedWith(t *testing.T, rec *taskstate.Record, code int) json.RawMessage {
	t.Helper()
	if rec.Status != proto.StatusFailed || rec.Error == nil || rec.Error.Code != code {
		t.Fatalf("got %s (error %+v, result %s), want failed with %d", rec.Status, rec.Error, rec.Result, code)
	}
	b, err := json.Marshal(rec.Error.Data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}

// timeAfter fires at the failure bound.
func timeAfter(t *testing.T) <-chan time.Time {
	t.Helper()
	return time.After(fxBound)
}
