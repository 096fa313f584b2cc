package command

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/proto"
)

// sh is a spec running a POSIX shell script (the test's program, not a
// way arguments are passed).
func sh(name, script string) Spec {
	return Spec{Name: name, Command: []string{"sh", "-c", script}, Grace: 200 * time.Millisecond}
}

func TestProgressAndOutputFiles(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nnot really")
	script := `set -e
echo '{"status":"starting"}' >&3
echo 'not a protocol line' >&3
echo '{"progress":1,"total":2,"message":"half way"}' >&3
printf 'hello' > "$MCPQ_OUTPUT/a.txt"
printf '\211PNG\r\n\032\nnot really' > "$MCPQ_OUTPUT/b.png"
printf 'RIFF' > "$MCPQ_OUTPUT/c.wav"
printf '\000\001' > "$MCPQ_OUTPUT/d.bin"
mkdir "$MCPQ_OUTPUT/sub"; printf '{"k":1}' > "$MCPQ_OUTPUT/sub/e f.json"
echo "stdout is not the result when files are"
echo '{"status":"done"}' >&3`
	env := mcpqtest.New(t, mustNew(t, sh("files", script)))
	run := env.Call(t, "files", map[string]any{})
	res := run.Result(t)
	if got := run.State(t).StatusMessage; got != "Completed" {
		t.Fatalf("statusMessage %q", got)
	}
	if res.IsError || len(res.Content) != 5 {
		t.Fatalf("result %+v", res)
	}
	c := res.Content
	if c[0].Type != "text" || c[0].Text != "hello" {
		t.Fatalf("a.txt: %+v", c[0])
	}
	if d, _ := base64.StdEncoding.DecodeString(c[1].Data); c[1].Type != "image" || c[1].MimeType != "image/png" || !bytes.Equal(d, png) {
		t.Fatalf("b.png: %+v", c[1])
	}
	if c[2].Type != "audio" || c[2].MimeType != "audio/wav" {
		t.Fatalf("c.wav: %+v", c[2])
	}
	var rc proto.ResourceContents
	if err := json.Unmarshal(c[3].Resource, &rc); err != nil || c[3].Type != "resource" || rc.URI != "output:///d.bin" ||
		rc.MimeType != "application/octet-stream" || rc.Blob == nil || *rc.Blob != "AAE=" {
		t.Fatalf("d.bin: %+v %+v", c[3], rc)
	}
	if c[4].Type != "text" || c[4].Text != `{"k":1}` {
		t.Fatalf("sub/e f.json: %+v", c[4])
	}
}

func TestProgressIsStatusMessage(t *testing.T) {
	script := `echo '{"progress":1,"total":4,"message":"frame 1/4"}' >&3; read -r _ < "$MCPQ_ARGS"; sleep 300`
	env := mcpqtest.New(t, mustNew(t, sh("progress", script)))
	run := env.Call(t, "progress", map[string]any{})
	run.WaitMessage(t, "frame 1/4")
	run.Cancel(t)
	if st := run.End(t); st.Status != proto.StatusCancelled {
		t.Fatalf("ended %s", st.Status)
	}
}

func TestStdoutIsTheResultWithoutFiles(t *testing.T) {
	env := mcpqtest.New(t, mustNew(t, sh("echo", `cat "$MCPQ_ARGS"`)))
	res := env.Call(t, "echo", map[string]any{"x": "y\nz"}).Result(t)
	if res.IsError || len(res.Content) != 1 || res.Content[0].Text != `{"x":"y\nz"}` {
		t.Fatalf("result %+v", res)
	}
	res = mcpqtest.New(t, mustNew(t, sh("quiet", `true`))).Call(t, "quiet", map[string]any{}).Result(t)
	if res.IsError || len(res.Content) != 0 {
		t.Fatalf("no output: %+v", res)
	}
}

func TestCrashIsAToolErrorWithTheStderrTail(t *testing.T) {
	script := `i=0; while [ $i -lt 2000 ]; do echo "noise $i" >&2; i=$((i+1)); done
echo 'Traceback: ValueError: width must be even' >&2; exit 3`
	env := mcpqtest.New(t, mustNew(t, sh("crash", script)))
	res := env.Call(t, "crash", map[string]any{}).Result(t)
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("result %+v", res)
	}
	text := res.Content[0].Text
	for _, want := range []string{"crash: the program failed (exit status 3)", "stderr (last 4096 bytes):", "ValueError: width must be even"} {
		if !strings.Contains(text, want) {
			t.Fatalf("tool error %q lacks %q", text, want)
		}
	}
	if strings.Contains(text, "noise 0\n") || len(text) > 4096+200 {
		t.Fatalf("tool error holds more than the tail (%d bytes)", len(text))
	}

	res = env2(t, sh("signal", `echo 'about to die' >&2; kill -SEGV $$`)).Call(t, "signal", map[string]any{}).Result(t)
	if !res.IsError || !strings.Contains(res.Content[0].Text, "signal: segmentation fault") ||
		!strings.Contains(res.Content[0].Text, "about to die") {
		t.Fatalf("killed by a signal: %+v", res)
	}

	spec := Spec{Name: "missing", Command: []string{"/nonexistent/program"}}
	res = env2(t, spec).Call(t, "missing", map[string]any{}).Result(t)
	if !res.IsError || !strings.Contains(res.Content[0].Text, "missing: cannot start /nonexistent/program") {
		t.Fatalf("missing program: %+v", res)
	}
}

func env2(t *testing.T, s Spec) *mcpqtest.Env { return mcpqtest.New(t, mustNew(t, s)) }

// TestTimeoutIsAToolError: a run over its timeout is stopped; the tool
// error carries the stderr tail and what the output folder held.
func TestTimeoutIsAToolError(t *testing.T) {
	s := sh("slow", `echo "working on it" >&2; echo partial > "$MCPQ_OUTPUT/part.txt"; sleep 300`)
	s.Timeout = 100 * time.Millisecond
	res := env2(t, s).Call(t, "slow", map[string]any{}).Result(t)
	if !res.IsError || !strings.Contains(res.Content[0].Text, "slow: timed out after 100ms and was stopped") ||
		!strings.Contains(res.Content[0].Text, "working on it") {
		t.Fatalf("result %+v", res)
	}
	if len(res.Content) != 2 || res.Content[1].Text != "partial\n" {
		t.Fatalf("the partial output is not in the result: %+v", res.Content)
	}
}

// TestCheckpointComesBackAfterRedelivery: the first delivery saves a
// checkpoint and is lost; the next one finds it in $MCPQ_CHECKPOINT.
func TestCheckpointComesBackAfterRedelivery(t *testing.T) {
	script := `if [ -f "$MCPQ_CHECKPOINT" ]; then printf 'resumed at attempt %s from ' "$MCPQ_ATTEMPT"; cat "$MCPQ_CHECKPOINT"; exit 0; fi
echo '{"checkpoint":{"done":[1,2]}}' >&3
echo '{"status":"saved"}' >&3
sleep 300`
	env := env2(t, sh("resume", script))
	run := env.Call(t, "resume", map[string]any{})
	run.WaitMessage(t, "saved")
	run.Redeliver(t)
	res := run.Result(t)
	d := run.Deliveries()
	want := fmt.Sprintf(`resumed at attempt %d from {"done":[1,2]}`, d[len(d)-1])
	if len(d) != 2 || res.IsError || len(res.Content) != 1 || res.Content[0].Text != want {
		t.Fatalf("deliveries %v, result %+v, want %q", d, res, want)
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("MCPQ_API_KEY", "secret")
	t.Setenv("REDIS_URL", "redis://:password@host/0")
	t.Setenv("COMMAND_TEST_INHERITED", "yes")
	s := Spec{Name: "env", Command: []string{self(t), "MCPQ_API_KEY", "REDIS_URL", "COMMAND_TEST_INHERITED", "EXTRA",
		"MCPQ_STATUS_FD", "MCPQ_ATTEMPT", "MCPQ_TASK_ID"},
		Env: map[string]string{helperEnv: "env", "EXTRA": "from the spec"}}
	env := env2(t, s)
	run := env.Call(t, "env", map[string]any{})
	res := run.Result(t)
	var got map[string]*string
	if err := json.Unmarshal([]byte(res.Content[0].Text), &got); err != nil {
		t.Fatalf("%+v: %v", res, err)
	}
	str := func(k string) string {
		if got[k] == nil {
			return "<unset>"
		}
		return *got[k]
	}
	for k, want := range map[string]string{"MCPQ_API_KEY": "<unset>", "REDIS_URL": "<unset>", "COMMAND_TEST_INHERITED": "yes",
		"EXTRA": "from the spec", "MCPQ_STATUS_FD": "3", "MCPQ_ATTEMPT": "1", "MCPQ_TASK_ID": run.TaskID()} {
		if str(k) != want {
			t.Errorf("%s = %q, want %q", k, str(k), want)
		}
	}
}

// TestInputParksTheTask: an input line moves the task to input_required
// and stops the program; once answered, the program runs again and finds
// the answer in $MCPQ_INPUT/<key>.json.
func TestInputParksTheTask(t *testing.T) {
	script := `echo "run $MCPQ_ATTEMPT" >&2
echo '{"input":{"key":"approve","method":"elicitation/create","params":{"message":"Go on?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}}' >&3
while [ ! -f "$MCPQ_INPUT/approve.json" ]; do sleep 0.02; done
cat "$MCPQ_INPUT/approve.json"`
	env := env2(t, sh("ask", script))
	run := env.Call(t, "ask", map[string]any{})
	reqs := run.Input(t)
	if r, ok := reqs["approve"]; !ok || r.Method != proto.MethodElicit {
		t.Fatalf("input requests %+v", reqs)
	}
	run.Accept(t, "approve", map[string]any{"ok": true})
	res := run.Result(t)
	var got proto.ElicitResult
	if res.IsError || len(res.Content) != 1 || json.Unmarshal([]byte(res.Content[0].Text), &got) != nil ||
		got.Action != proto.ElicitAccept || string(got.Content) != `{"ok":true}` {
		t.Fatalf("result %+v", res)
	}
	if d := run.Deliveries(); len(d) != 2 {
		t.Fatalf("deliveries %v, want 2 (asked, then answered)", d)
	}
}
