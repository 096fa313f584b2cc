package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/toolpack/chaos"
	"github.com/mcpq/mcpq/proto"
)

var t0 = time.Unix(1700000000, 0)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func testDriver() *driver {
	cfg := config{takeoverMed: 15 * time.Second, takeoverMax: 30 * time.Second,
		cancelMax: 5 * time.Second, resumeMax: 10 * time.Second}
	return &driver{cfg: cfg, obs: newObserver("chaos1:"), byID: map[string]*tk{}, start: t0}
}

func (d *driver) with(id string, o *obs) {
	if o.pid == nil {
		o.pid = map[int64]int{}
	}
	d.obs.tasks[id] = o
}

func TestTakeoverCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		claims []claim
		ends   []ending
		ok     bool
		detail string
	}{
		{"fast", []claim{{1, at(0)}, {2, at(22)}}, nil, true, "1 taken over, median 12s, max 12s; 0 not taken over"},
		{"slow median", []claim{{1, at(0)}, {2, at(30)}}, nil, false, "median 20s"},
		{"never", []claim{{1, at(0)}}, nil, false, "0 taken over, median 0s, max 0s; 1 not taken over"},
		{"same attempt finished", []claim{{1, at(0)}}, []ending{{"completed", at(30)}}, false, "ended completed by attempt 1 without a takeover"},
		{"cancelled instead", []claim{{1, at(0)}}, []ending{{"cancelled", at(3)}}, false, "nothing measured"},
		{"claim before the fault is not a takeover", []claim{{1, at(0)}, {2, at(9)}}, nil, false, "not claimed again"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := testDriver()
			d.with("T1", &obs{claims: c.claims, endings: c.ends})
			d.faults = []fault{{what: "SIGKILL worker1", at: at(10), worker: true, held: []hold{{"T1", 1}}},
				{what: "SIGKILL frontend1", at: at(11), held: []hold{{"T1", 1}}}} // not a worker: ignored
			got := d.takeoverCheck()
			if got.ok != c.ok || !strings.Contains(got.detail, c.detail) {
				t.Fatalf("takeover %v %q; want %v and %q", got.ok, got.detail, c.ok, c.detail)
			}
		})
	}
}

func TestCancelCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		req        time.Time
		ends       []ending
		ack        time.Time
		okCancel   bool
		okComplete bool
		detail     string
	}{
		{"cancelled fast", at(1), []ending{{"cancelled", at(2)}}, at(1.1), true, true, "1 cancelled"},
		{"cancelled inside the cancel script", at(1), []ending{{"cancelled", at(1)}}, at(1.1), true, true, "median 0s"},
		{"late", at(1), []ending{{"cancelled", at(9)}}, at(1.1), false, true, "1 over 5s"},
		{"never", at(1), nil, at(1.1), false, true, "never ended"},
		{"completed after the cancel", at(1), []ending{{"completed", at(2)}}, at(1.1), false, false, "0 cancelled"},
		{"cancel after the end", at(3), []ending{{"completed", at(2)}}, at(3.1), false, true, "1 cancels came after the end"},
		{"refused cancel: no request seen", time.Time{}, []ending{{"completed", at(2)}}, at(3.1), false, true, "1 cancels came after the end"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := testDriver()
			d.with("T1", &obs{cancelReq: c.req, endings: c.ends})
			task := &tk{id: "T1", tool: "chaos_steps", cancelAck: c.ack, cancelWhy: "worker dead"}
			got := d.cancelCheck([]*tk{task})
			if got[0].ok != c.okCancel || got[1].ok != c.okComplete || !strings.Contains(got[0].detail, c.detail) {
				t.Fatalf("cancel %v %q, completed-after %v %q; want %v %v and %q",
					got[0].ok, got[0].detail, got[1].ok, got[1].detail, c.okCancel, c.okComplete, c.detail)
			}
		})
	}
}

func TestResumeCheck(t *testing.T) {
	t.Parallel()
	d := testDriver()
	if d.resumeCheck().ok {
		t.Fatal("no restart passed")
	}
	d.with("A", &obs{writes: []time.Time{at(1), at(12)}})
	d.with("B", &obs{writes: []time.Time{at(1)}})
	d.redisRestart = &redisRestart{down: at(5), up: at(6), inFlight: []hold{{"A", 1}}}
	if got := d.resumeCheck(); !got.ok || !strings.Contains(got.detail, "max 6s") {
		t.Fatalf("resume %v %q", got.ok, got.detail)
	}
	d.redisRestart.inFlight = append(d.redisRestart.inFlight, hold{"B", 1})
	if got := d.resumeCheck(); got.ok || !strings.Contains(got.detail, "B never wrote again") {
		t.Fatalf("resume %v %q", got.ok, got.detail)
	}
	d.redisRestart.inFlight = []hold{{"A", 1}}
	d.cfg.resumeMax = 5 * time.Second
	if got := d.resumeCheck(); got.ok {
		t.Fatalf("6s resume passed a 5s target: %q", got.detail)
	}
}

func TestWrong(t *testing.T) {
	t.Parallel()
	res := func(text string) json.RawMessage {
		b, _ := json.Marshal(proto.CallToolResult{Content: []proto.Content{proto.TextContent(text)}})
		return b
	}
	get := func(s proto.TaskStatus, r json.RawMessage, e *proto.Error) *proto.GetTaskResult {
		g := &proto.GetTaskResult{}
		g.Status, g.Result, g.Error = s, r, e
		return g
	}
	steps := &tk{tool: "chaos_steps", steps: 4, seed: 9}
	for _, c := range []struct {
		t     *tk
		g     *proto.GetTaskResult
		wrong bool
	}{
		{steps, get(proto.StatusCompleted, res(chaos.StepsResult(4, 9)), nil), false},
		{steps, get(proto.StatusCompleted, res(chaos.StepsResult(3, 9)), nil), true},
		{steps, get(proto.StatusCompleted, json.RawMessage(`{"content":[]}`), nil), true},
		{steps, get(proto.StatusCancelled, nil, nil), false},
		{steps, get(proto.StatusFailed, nil, &proto.Error{Message: "boom"}), false}, // unexpected, not wrong
		{&tk{tool: "chaos_instant", seed: 2}, get(proto.StatusCompleted, res(chaos.InstantResult(2)), nil), false},
		{&tk{tool: "chaos_instant", seed: 2}, get(proto.StatusCompleted, res(chaos.InstantResult(3)), nil), true},
		{&tk{tool: "chaos_fail"}, get(proto.StatusFailed, nil, &proto.Error{Code: chaos.FailCode, Message: chaos.FailMessage}), false},
		{&tk{tool: "chaos_fail"}, get(proto.StatusCompleted, res("x"), nil), true},
	} {
		if got := wrong(c.t, c.g); (got != "") != c.wrong {
			t.Errorf("wrong(%s %s) = %q, want wrong %v", c.t.tool, c.g.Status, got, c.wrong)
		}
	}
}

func TestNoteState(t *testing.T) {
	t.Parallel()
	a := `{"taskId":"T1","status":"working","statusMessage":"x","_meta":{"k":1}}`
	b := `{"statusMessage":"x","_meta":{"k":2},"status":"working","taskId":"T1"}`
	id, sa, st, ok := noteState(json.RawMessage(a))
	_, sb, _, _ := noteState(json.RawMessage(b))
	if !ok || id != "T1" || st != proto.StatusWorking || sa != sb {
		t.Fatalf("noteState: %q %q %q %v; %q", id, sa, st, ok, sb)
	}
	if _, _, _, ok := noteState(json.RawMessage(`{"status":"working"}`)); ok {
		t.Fatal("a note without taskId was accepted")
	}
}

func TestReportVerdict(t *testing.T) {
	t.Parallel()
	r := &report{checks: []check{{"a", "fine", true}, {"b", "bad", false}}}
	s := r.String()
	if r.pass() || !strings.Contains(s, "FAIL  b") || !strings.Contains(s, "RESULT: FAIL (1 of 2 checks)") {
		t.Fatalf("report:\n%s", s)
	}
	r.checks[1].ok = true
	if !r.pass() || !strings.HasSuffix(r.String(), "RESULT: PASS\n") {
		t.Fatalf("report:\n%s", r.String())
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	c, err := parseFlags([]string{"--short", "--", "--lost-after", "8s"})
	if err != nil || c.duration != 90*time.Second || c.rate != 1.5 || strings.Join(c.workerArgs, " ") != "--lost-after 8s" {
		t.Fatalf("parseFlags: %+v %v", c, err)
	}
	for _, bad := range [][]string{
		{"--duration", "10s"}, {"--rate", "0.0001", "--rate", "-1"}, {"--pause", "1m", "--duration", "90s"},
		{"--redis-signal", "HUP"}, {"--cancel-pct", "101"}, {"--load-share", "1"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}
