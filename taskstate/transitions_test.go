package taskstate_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// wantAllowed is the state machine written out independently of
// taskstate.Transitions(), so a change to the table has to change this too.
var wantAllowed = map[[2]proto.TaskStatus]bool{
	{taskstate.StatusNew, proto.StatusWorking}: true,

	{proto.StatusWorking, proto.StatusInputRequired}: true,
	{proto.StatusWorking, proto.StatusCompleted}:     true,
	{proto.StatusWorking, proto.StatusFailed}:        true,
	{proto.StatusWorking, proto.StatusCancelled}:     true,

	{proto.StatusInputRequired, proto.StatusWorking}:   true,
	{proto.StatusInputRequired, proto.StatusCompleted}: true,
	{proto.StatusInputRequired, proto.StatusFailed}:    true,
	{proto.StatusInputRequired, proto.StatusCancelled}: true,
}

var terminalStatuses = []proto.TaskStatus{proto.StatusCompleted, proto.StatusFailed, proto.StatusCancelled}

func name(s proto.TaskStatus) string {
	if s == taskstate.StatusNew {
		return "new"
	}
	return string(s)
}

func TestTransitionTable(t *testing.T) {
	t.Parallel()
	if got := len(taskstate.AllStatuses()); got != 6 {
		t.Fatalf("AllStatuses has %d entries, want 6", got)
	}
	seen := map[proto.TaskStatus]bool{}
	for _, s := range taskstate.AllStatuses() {
		if seen[s] {
			t.Fatalf("AllStatuses lists %q twice", s)
		}
		seen[s] = true
	}
	for from, tos := range taskstate.Transitions() {
		if !seen[from] {
			t.Errorf("Transitions row %q is not in AllStatuses", from)
		}
		for _, to := range tos {
			if !seen[to] {
				t.Errorf("Transitions target %q (from %q) is not in AllStatuses", to, from)
			}
		}
	}
	for _, from := range taskstate.AllStatuses() {
		for _, to := range taskstate.AllStatuses() {
			t.Run(name(from)+"->"+name(to), func(t *testing.T) {
				want := wantAllowed[[2]proto.TaskStatus{from, to}]
				if got := taskstate.Allowed(from, to); got != want {
					t.Fatalf("Allowed(%q, %q) = %v, want %v", from, to, got, want)
				}
				if from.Terminal() && want {
					t.Fatalf("terminal %q has a way out", from)
				}
			})
		}
	}
	for _, s := range terminalStatuses {
		if _, ok := taskstate.Transitions()[s]; ok {
			t.Errorf("terminal %q has a row in Transitions", s)
		}
	}
	if taskstate.Allowed("bogus", proto.StatusWorking) || taskstate.Allowed(proto.StatusWorking, "bogus") {
		t.Error("Allowed accepts an unknown status")
	}
}

// inputKey is the input request drive issues to park a task.
const inputKey = "confirm"

func inputRequest(key string) map[string]json.RawMessage {
	return map[string]json.RawMessage{key: json.RawMessage(`{"method":"elicitation/create","params":{"message":"ok?"}}`)}
}

// drive puts a real record into from through the public API and returns it
// with the attempt that owns it. StatusNew returns a ref that was never
// created; input_required is reached with RequestInput, the public call that
// parks a task for input, so that row runs on real records too.
func (e *env) drive(t *testing.T, from proto.TaskStatus) (ref taskstate.Ref, attempt int64) {
	t.Helper()
	if from == taskstate.StatusNew {
		return taskstate.Ref{Owner: taskstate.OwnerTag(principal), ID: taskstate.NewID()}, 0
	}
	ref = e.create(t, taskstate.CreateParams{})
	attempt = e.claim(t, ref)
	switch {
	case from == proto.StatusInputRequired:
		if err := e.s.RequestInput(ctx(t), ref, attempt, inputRequest(inputKey)); err != nil {
			t.Fatalf("RequestInput: %v", err)
		}
	case from.Terminal():
		if err := e.s.Finish(ctx(t), ref, attempt, outcome(from)); err != nil {
			t.Fatalf("Finish(%s): %v", from, err)
		}
	}
	if got := e.get(t, ref).Status; got != from {
		t.Fatalf("driven to %q, want %q", got, from)
	}
	return ref, attempt
}

// move performs an allowed transition with the public call that makes it.
func (e *env) move(t *testing.T, ref taskstate.Ref, attempt int64, from, to proto.TaskStatus) {
	t.Helper()
	var err error
	switch {
	case from == taskstate.StatusNew && to == proto.StatusWorking:
		_, err = e.s.Create(ctx(t), taskstate.CreateParams{ID: ref.ID, Principal: principal, Tool: "echo"})
	case to == proto.StatusInputRequired:
		err = e.s.RequestInput(ctx(t), ref, attempt, inputRequest("ask"))
	case from == proto.StatusInputRequired && to == proto.StatusWorking:
		var res taskstate.AnswerResult
		res, err = e.s.Answer(ctx(t), ref, map[string]json.RawMessage{inputKey: json.RawMessage(`{"action":"accept"}`)})
		if err == nil && (res.Applied != 1 || res.Resume < 1) {
			t.Fatalf("Answer = %+v, want one applied and a resume", res)
		}
	default:
		err = e.s.Finish(ctx(t), ref, attempt, outcome(to))
	}
	if err != nil {
		t.Fatalf("%s -> %s: %v", name(from), name(to), err)
	}
}

// refusal is one public call that asks for a refused transition.
type refusal struct {
	name string
	do   func() error
	want error
}

// refusals lists the calls that ask for from -> to, which the table refuses.
func (e *env) refusals(t *testing.T, ref taskstate.Ref, attempt int64, from, to proto.TaskStatus) []refusal {
	want := taskstate.ErrIllegal
	switch {
	case from == taskstate.StatusNew:
		want = taskstate.ErrNotFound // no record to refuse: nothing is found
	case from.Terminal():
		want = taskstate.ErrTerminal
	}
	rs := []refusal{{"Finish", func() error { return e.s.Finish(ctx(t), ref, attempt, outcome(to)) }, want}}
	switch to {
	case proto.StatusInputRequired:
		rs = append(rs, refusal{"RequestInput", func() error {
			return e.s.RequestInput(ctx(t), ref, attempt, inputRequest("again"))
		}, want})
	case proto.StatusWorking:
		// Create is the way into working from new; on a record it is refused
		// whatever the status.
		rs = append(rs, refusal{"Create", func() error {
			_, err := e.s.Create(ctx(t), taskstate.CreateParams{ID: ref.ID, Principal: principal, Tool: "echo"})
			return err
		}, taskstate.ErrExists})
		// Answer is the way into working from input_required. A working
		// task, waiting for nothing, is left alone (nil).
		answerWant := want
		if from == proto.StatusWorking {
			answerWant = nil
		}
		rs = append(rs, refusal{"Answer", func() error {
			res, err := e.s.Answer(ctx(t), ref, map[string]json.RawMessage{inputKey: json.RawMessage(`{}`)})
			if res != (taskstate.AnswerResult{}) {
				t.Errorf("Answer = %+v on a %s task", res, name(from))
			}
			return err
		}, answerWant})
	}
	return rs
}

// TestTransitionsThroughStore walks AllStatuses x AllStatuses on real
// records. Allowed pairs are made with the call that makes them (Create,
// RequestInput, Answer, Finish) and must show the new status and publish it;
// refused pairs are asked for with Finish (the one call that names a target)
// and any dedicated call, and must return the right sentinel, leave the
// record byte-for-byte as it was and publish nothing.
func TestTransitionsThroughStore(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		for _, from := range taskstate.AllStatuses() {
			for _, to := range taskstate.AllStatuses() {
				t.Run(name(from)+"->"+name(to), func(t *testing.T) {
					ref, attempt := e.drive(t, from)
					if !wantAllowed[[2]proto.TaskStatus{from, to}] {
						for _, r := range e.refusals(t, ref, attempt, from, to) {
							t.Run(r.name, func(t *testing.T) { e.unchanged(t, ref, r.do, r.want) })
						}
						if from == taskstate.StatusNew && e.exists(t, ref) {
							t.Fatal("a refused call created the record")
						}
						return
					}
					w := e.watch(t, ref)
					e.clock.Advance(1500 * time.Millisecond)
					e.move(t, ref, attempt, from, to)
					if from != taskstate.StatusNew { // Create publishes nothing
						w.expect(t, string(to))
					}
					w.quiet(t)
					r := e.get(t, ref)
					if r.Status != to {
						t.Fatalf("status %q, want %q", r.Status, to)
					}
					if !r.LastUpdatedAt.Equal(e.clock.Now()) {
						t.Fatalf("lastUpdatedAt %v, want %v", r.LastUpdatedAt, e.clock.Now())
					}
					if to.Terminal() {
						o := outcome(to)
						if r.StatusMessage != o.StatusMessage {
							t.Fatalf("statusMessage %q, want %q", r.StatusMessage, o.StatusMessage)
						}
						checkPayload(t, r, o)
					}
					if to == proto.StatusInputRequired {
						if _, ok := r.Detailed().InputRequests["ask"]; !ok {
							t.Fatalf("input_required without its request: %+v", r.InputRequests)
						}
					}
				})
			}
		}
	})
}

// checkPayload asserts the result or error a Finish stored.
func checkPayload(t *testing.T, r *taskstate.Record, o taskstate.Outcome) {
	t.Helper()
	switch o.Status {
	case proto.StatusCompleted:
		if string(r.Result) != string(o.Result) || r.Error != nil {
			t.Fatalf("result %s error %v, want result %s", r.Result, r.Error, o.Result)
		}
		if d := r.Detailed(); string(d.Result) != string(o.Result) {
			t.Fatalf("Detailed result %s", d.Result)
		}
	case proto.StatusFailed:
		if r.Error == nil || r.Error.Code != o.Error.Code || r.Error.Message != o.Error.Message || r.Result != nil {
			t.Fatalf("error %+v result %s, want error %+v", r.Error, r.Result, o.Error)
		}
		if d := r.Detailed(); d.Error == nil || d.Error.Message != o.Error.Message {
			t.Fatalf("Detailed error %+v", d.Error)
		}
	default:
		if r.Result != nil || r.Error != nil {
			t.Fatalf("%s record carries result %s error %v", o.Status, r.Result, r.Error)
		}
	}
}

// TestTerminalNeverChanges tries every write on every terminal record,
// whichever way it ended.
func TestTerminalNeverChanges(t *testing.T) {
	t.Parallel()
	type source struct {
		name string
		end  func(t *testing.T, e *env) (taskstate.Ref, int64)
	}
	finished := func(s proto.TaskStatus) func(t *testing.T, e *env) (taskstate.Ref, int64) {
		return func(t *testing.T, e *env) (taskstate.Ref, int64) {
			return e.drive(t, s)
		}
	}
	sources := []source{
		{"completed", finished(proto.StatusCompleted)},
		{"failed", finished(proto.StatusFailed)},
		{"cancelled by Finish", finished(proto.StatusCancelled)},
		{"cancelled before a claim", func(t *testing.T, e *env) (taskstate.Ref, int64) {
			ref := e.create(t, taskstate.CreateParams{})
			if err := e.s.RequestCancel(ctx(t), ref); err != nil {
				t.Fatalf("RequestCancel: %v", err)
			}
			return ref, 0
		}},
		{"cancelled while waiting for input", func(t *testing.T, e *env) (taskstate.Ref, int64) {
			ref, attempt := e.drive(t, proto.StatusInputRequired)
			if err := e.s.RequestCancel(ctx(t), ref); err != nil {
				t.Fatalf("RequestCancel: %v", err)
			}
			return ref, attempt
		}},
		{"completed after input", func(t *testing.T, e *env) (taskstate.Ref, int64) {
			ref, attempt := e.drive(t, proto.StatusInputRequired)
			if err := e.s.Finish(ctx(t), ref, attempt, outcome(proto.StatusCompleted)); err != nil {
				t.Fatalf("Finish: %v", err)
			}
			return ref, attempt
		}},
		{"cancelled by a re-claim", func(t *testing.T, e *env) (taskstate.Ref, int64) {
			ref := e.create(t, taskstate.CreateParams{})
			attempt := e.claim(t, ref)
			if err := e.s.RequestCancel(ctx(t), ref); err != nil {
				t.Fatalf("RequestCancel: %v", err)
			}
			if _, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{}); !errors.Is(err, taskstate.ErrCancelled) {
				t.Fatalf("re-Claim: %v, want ErrCancelled", err)
			}
			return ref, attempt
		}},
	}
	type op struct {
		name string
		do   func(t *testing.T, e *env, ref taskstate.Ref, attempt int64) error
		want error
	}
	ops := []op{
		{"RequestCancel", func(t *testing.T, e *env, ref taskstate.Ref, _ int64) error {
			return e.s.RequestCancel(ctx(t), ref)
		}, nil},
		{"Claim", func(t *testing.T, e *env, ref taskstate.Ref, _ int64) error {
			c, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{})
			if c != nil {
				t.Errorf("Claim returned %+v with %v", c, err)
			}
			return err
		}, taskstate.ErrTerminal},
		{"Progress", func(t *testing.T, e *env, ref taskstate.Ref, attempt int64) error {
			return e.s.Progress(ctx(t), ref, attempt, "still here")
		}, taskstate.ErrTerminal},
		{"Heartbeat", func(t *testing.T, e *env, ref taskstate.Ref, attempt int64) error {
			return e.s.Heartbeat(ctx(t), ref, attempt)
		}, taskstate.ErrTerminal},
		{"Progress stale attempt", func(t *testing.T, e *env, ref taskstate.Ref, attempt int64) error {
			return e.s.Progress(ctx(t), ref, attempt+7, "still here")
		}, taskstate.ErrTerminal},
		{"RequestInput", func(t *testing.T, e *env, ref taskstate.Ref, attempt int64) error {
			return e.s.RequestInput(ctx(t), ref, attempt, inputRequest("late"))
		}, taskstate.ErrTerminal},
		{"Answer", func(t *testing.T, e *env, ref taskstate.Ref, _ int64) error {
			_, err := e.s.Answer(ctx(t), ref, map[string]json.RawMessage{inputKey: json.RawMessage(`{}`)})
			return err
		}, taskstate.ErrTerminal},
		{"SaveCheckpoint", func(t *testing.T, e *env, ref taskstate.Ref, attempt int64) error {
			return e.s.SaveCheckpoint(ctx(t), ref, attempt, json.RawMessage(`{"step":9}`))
		}, taskstate.ErrTerminal},
		{"Create same id", func(t *testing.T, e *env, ref taskstate.Ref, _ int64) error {
			_, err := e.s.Create(ctx(t), taskstate.CreateParams{ID: ref.ID, Principal: principal, Tool: "echo"})
			return err
		}, taskstate.ErrExists},
	}
	for _, to := range taskstate.AllStatuses() {
		ops = append(ops, op{"Finish " + name(to), func(t *testing.T, e *env, ref taskstate.Ref, attempt int64) error {
			return e.s.Finish(ctx(t), ref, attempt, outcome(to))
		}, taskstate.ErrTerminal})
	}
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		for _, src := range sources {
			for _, o := range ops {
				t.Run(src.name+"/"+o.name, func(t *testing.T) {
					ref, attempt := src.end(t, e)
					status := e.get(t, ref).Status
					if !status.Terminal() {
						t.Fatalf("source ended %q", status)
					}
					e.unchanged(t, ref, func() error { return o.do(t, e, ref, attempt) }, o.want)
				})
			}
		}
	})
}
