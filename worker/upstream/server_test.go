package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// registry collects what a Server publishes.
type registry struct {
	mu        sync.Mutex
	tools     map[string]worker.Tool
	resources map[string]worker.Resource
}

func (r *registry) AddResource(_ context.Context, res worker.Resource) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.resources == nil {
		r.resources = map[string]worker.Resource{}
	}
	r.resources[res.Resource.URI] = res
	return nil
}

func (r *registry) AddTool(_ context.Context, t worker.Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tools == nil {
		r.tools = map[string]worker.Tool{}
	}
	r.tools[t.Name] = t
	return nil
}

func (r *registry) RemoveTool(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.tools[name]
	delete(r.tools, name)
	return ok
}

func (r *registry) list() []worker.Tool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]worker.Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t)
	}
	return out
}

// fakeSpec is a server spec running the fake upstream in era.
func fakeSpec(t *testing.T, era string) Spec {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Name: "fake", Command: []string{self}, Env: map[string]string{fakeEnv: era}}
}

// serve lists spec's tools into an mcpqtest environment.
func serve(t *testing.T, spec Spec) (*Server, *registry, *mcpqtest.Env) {
	t.Helper()
	reg := &registry{}
	s, err := NewServer(spec, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.pool.close(context.Background()) })
	if _, err := s.refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s, reg, mcpqtest.New(t, reg.list()...)
}

func TestCatalogFollowsPagesSelectsAndWithdraws(t *testing.T) {
	spec := fakeSpec(t, "legacy")
	spec.Tools = []string{"echo", "r*"}
	spec.Prefix = "fk."
	s, reg, _ := serve(t, spec)
	got := map[string]worker.Tool{}
	for _, tl := range reg.list() {
		got[tl.Name] = tl
	}
	if len(got) != 2 || got["fk.echo"].Name == "" || got["fk.rich"].Name == "" {
		t.Fatalf("served %v, want fk.echo and fk.rich (from two pages)", got)
	}
	echo := got["fk.echo"]
	if echo.Description != "Echoes." || string(echo.Annotations) != `{"readOnlyHint":true}` ||
		string(echo.Icons) != `[{"src":"https://x/i.png"}]` || string(got["fk.rich"].OutputSchema) != `{"type":"object"}` {
		t.Errorf("echo published as %+v", echo)
	}
	// The tool vanishes upstream: it is withdrawn.
	if err := s.sync(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if len(reg.list()) != 0 {
		t.Errorf("after the upstream listed nothing: %v", reg.list())
	}
}

func TestUpstreamDownWithdrawsItsTools(t *testing.T) {
	reg := &registry{}
	spec := fakeSpec(t, "legacy")
	s, err := NewServer(spec, reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(reg.list()) == 0 {
		t.Fatal("nothing served")
	}
	// The process dies and cannot be started again.
	sl, err := s.pool.acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sl.sess.t.close()
	s.spec.Command = []string{filepath.Join(t.TempDir(), "no-such-program")}
	s.pool.release(sl)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(reg.list()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if n := len(reg.list()); n != 0 {
		t.Fatalf("%d tools still served while the upstream cannot start", n)
	}
}

func TestCallBothEras(t *testing.T) {
	for _, era := range []string{"legacy", "stateless"} {
		t.Run(era, func(t *testing.T) {
			_, _, env := serve(t, fakeSpec(t, era))
			res := env.Call(t, "echo", map[string]any{"a": 1}).Result(t)
			if len(res.Content) != 1 || res.Content[0].Text != `{"a":1}` {
				t.Errorf("echo: %+v", res)
			}
			rich := env.Call(t, "rich", map[string]any{}).Result(t)
			b, _ := json.Marshal(rich.Content)
			want := `[{"type":"text","text":"see"},{"type":"resource_link","mimeType":"text/plain","uri":"file:///a.txt","name":"a.txt","title":"A","icons":[{"src":"https://x/a.png"}]},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]`
			if string(b) != want || string(rich.StructuredContent) != `{"n":1}` || !rich.IsError {
				t.Errorf("rich: %s %s %v", b, rich.StructuredContent, rich.IsError)
			}
		})
	}
}

// An upstream's log messages reach the caller in order, the last one too,
// sent right before the answer: the relay forwards what it holds when the
// call ends, not drops it (logs.go).
func TestLogsReachTheCallerToTheLast(t *testing.T) {
	for _, era := range []string{"legacy", "stateless"} {
		t.Run(era, func(t *testing.T) {
			_, _, env := serve(t, fakeSpec(t, era))
			for range 20 {
				run := env.Call(t, "chatty", map[string]any{})
				if res := run.Result(t); res.Content[0].Text != "said three" {
					t.Fatalf("chatty: %+v", res)
				}
				var said []string
				for _, m := range run.Logs(t) {
					said = append(said, fmt.Sprintf("%s:%v", m.Level, m.Data))
				}
				if got := strings.Join(said, " "); got != "info:one info:two info:three" {
					t.Fatalf("log messages %q, want info:one info:two info:three", got)
				}
			}
		})
	}
}

func TestCancelNotifiesUpstream(t *testing.T) {
	spec := fakeSpec(t, "legacy")
	rec := filepath.Join(t.TempDir(), "notes")
	spec.Env[recordEnv] = rec
	_, _, env := serve(t, spec)
	run := env.Call(t, "slow", map[string]any{})
	run.WaitMessage(t, "step 1 of 3")
	run.Cancel(t)
	if st := run.End(t); st.Status != proto.StatusCancelled {
		t.Fatalf("task ended %s", st.Status)
	}
	waitFile(t, rec, `"method":"notifications/cancelled"`)
}

func TestTimeoutCancelsUpstreamAndFreesTheSlot(t *testing.T) {
	spec := fakeSpec(t, "legacy")
	spec.Timeout = 300 * time.Millisecond
	rec := filepath.Join(t.TempDir(), "notes")
	spec.Env[recordEnv] = rec
	_, _, env := serve(t, spec)
	res := env.Call(t, "misbehave", map[string]any{"mode": "hang"}).Result(t)
	if !res.IsError || !strings.Contains(res.Content[0].Text, "did not answer within 300ms") {
		t.Fatalf("hang: %+v", res)
	}
	waitFile(t, rec, `"reason":"timed out after 300ms"`)
	if r := env.Call(t, "echo", map[string]any{}).Result(t); r.IsError {
		t.Fatalf("the next call: %+v", r)
	}
}

func TestBadUpstreams(t *testing.T) {
	cases := []struct {
		mode, want string
		isError    bool
	}{
		{"crash", "panic: the model file is missing", true},
		{"garbage", "fine", false},
		{"long", "upstream wrote a line over", true},
		{"flood", "flooded", false},
	}
	_, _, env := serve(t, fakeSpec(t, "legacy"))
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			res := env.Call(t, "misbehave", map[string]any{"mode": c.mode}).Result(t)
			if res.IsError != c.isError || !strings.Contains(res.Content[0].Text, c.want) {
				t.Fatalf("%s: %+v", c.mode, res)
			}
			// Nothing else is harmed: the next call works (on a new process
			// where the old one crashed or broke the protocol).
			if r := env.Call(t, "echo", map[string]any{"after": c.mode}).Result(t); r.IsError {
				t.Fatalf("the next call: %+v", r)
			}
		})
	}
}

func TestLostWorkerRerunsOnlyWhereAllowed(t *testing.T) {
	for _, rerun := range []bool{false, true} {
		spec := fakeSpec(t, "legacy")
		spec.Rerun = rerun
		rec := filepath.Join(t.TempDir(), "notes")
		spec.Env[recordEnv] = rec
		_, _, env := serve(t, spec)
		run := env.Call(t, "slow", map[string]any{})
		run.WaitMessage(t, "step 1 of 3")
		run.Redeliver(t)
		if !rerun {
			st := run.End(t)
			if st.Status != proto.StatusFailed || st.Error == nil || !strings.Contains(st.Error.Message, "not run again") {
				t.Fatalf("without rerun: %s %+v", st.Status, st.Error)
			}
			continue
		}
		waitCount(t, rec, `"name":"slow"`, 2) // called upstream again
		run.Cancel(t)
		run.End(t)
	}
}

func TestRerunnableReadsTheHints(t *testing.T) {
	var again, echo, slow upstreamTool
	for _, raw := range fakeTools {
		var u upstreamTool
		_ = json.Unmarshal([]byte(raw), &u)
		switch u.Name {
		case "again":
			again = u
		case "echo":
			echo = u
		case "slow":
			slow = u
		}
	}
	if !again.rerunnable() || !echo.rerunnable() || slow.rerunnable() {
		t.Fatalf("rerunnable: again %v, echo %v, slow %v", again.rerunnable(), echo.rerunnable(), slow.rerunnable())
	}
}

// waitCount waits until file holds want n times.
func waitCount(t *testing.T, file, want string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(file); strings.Count(string(b), want) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b, _ := os.ReadFile(file)
	t.Fatalf("%s never held %s %d times: %s", file, want, n, b)
}

// waitFile waits until file holds want.
func waitFile(t *testing.T, file, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(file); strings.Contains(string(b), want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b, _ := os.ReadFile(file)
	t.Fatalf("%s never held %s: %s", file, want, b)
}
