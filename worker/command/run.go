package command

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// reservedEnvPrefix starts the names of the variables mcpq sets for the
// program; the worker's own variables with it (and REDIS_URL, which may
// hold a password) are not passed on.
const reservedEnvPrefix = "MCPQ_"

// The variables a program gets (docs/tools.md, "Command tools").
const (
	envArgs       = "MCPQ_ARGS"       // path of the arguments as a JSON object
	envOutput     = "MCPQ_OUTPUT"     // an empty folder for result files
	envCheckpoint = "MCPQ_CHECKPOINT" // path of the last checkpoint (present only when there is one)
	envStatusFD   = "MCPQ_STATUS_FD"  // the protocol descriptor, "3"
	envTaskID     = "MCPQ_TASK_ID"    // the task's id
	envAttempt    = "MCPQ_ATTEMPT"    // this delivery's attempt number
	envInput      = "MCPQ_INPUT"      // the folder answers to input requests appear in
)

// stderrTail is how much of the end of stderr a tool error quotes.
const stderrTail = 4 << 10

// runner runs one spec's program for each call.
type runner struct {
	spec  Spec
	out   outputSchema
	trees *keeper // the process's run records (tree_linux.go)
}

// runDir is the private folder of one run.
type runDir struct {
	root, args, checkpoint, out, input, stdout, stderr, structured, stop string
	scratch                                                              string // the task's, kept across runs ("": none)
}

func newRunDir(name string) (runDir, error) {
	root, err := os.MkdirTemp("", "mcpq-"+name+"-")
	if err != nil {
		return runDir{}, err
	}
	d := runDir{root: root, args: filepath.Join(root, "args.json"), checkpoint: filepath.Join(root, "checkpoint.json"),
		out: filepath.Join(root, "out"), input: filepath.Join(root, "input"),
		stdout: filepath.Join(root, "stdout"), stderr: filepath.Join(root, "stderr"),
		structured: filepath.Join(root, "structured.json"), stop: filepath.Join(root, "stop")}
	for _, sub := range []string{d.out, d.input} {
		if err := os.Mkdir(sub, 0o700); err != nil {
			os.RemoveAll(root)
			return runDir{}, err
		}
	}
	return d, nil
}

// handle is the tool's handler: one run of the program as one step.
func (r *runner) handle(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	args := map[string]json.RawMessage{}
	raw := c.Arguments
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid arguments: not a JSON object: %v", err)
	}
	argv, err := expand(r.spec.Command, args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.spec.Name, err)
	}
	d, err := newRunDir(r.spec.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot make the run's folder: %w", r.spec.Name, err)
	}
	defer os.RemoveAll(d.root)
	if d.scratch, err = scratchFor(r.spec.Scratch, c.TaskID); err != nil {
		return nil, fmt.Errorf("%s: %w", r.spec.Name, err)
	}
	if err := os.WriteFile(d.args, raw, 0o600); err != nil {
		return nil, fmt.Errorf("%s: cannot write the arguments: %w", r.spec.Name, err)
	}
	var cp json.RawMessage
	if ok, err := c.LoadCheckpoint(&cp); err != nil {
		return nil, fmt.Errorf("%s: the checkpoint is not JSON: %w", r.spec.Name, err)
	} else if ok {
		if err := os.WriteFile(d.checkpoint, cp, 0o600); err != nil {
			return nil, fmt.Errorf("%s: cannot write the checkpoint: %w", r.spec.Name, err)
		}
	}
	var res *proto.CallToolResult
	err = c.Step(ctx, func(ctx context.Context) error {
		var rerr error
		res, rerr = r.run(ctx, c, argv, d)
		return rerr
	})
	if d.scratch != "" && !keepScratch(ctx, err) {
		if rerr := os.RemoveAll(d.scratch); rerr != nil {
			r.spec.Logger.Warn("command tool: scratch folder not removed", "tool", r.spec.Name, "task", c.TaskID, "err", rerr)
		}
	}
	return res, err
}

// run starts the program and waits for it; ctx ending (cancel, expiry,
// worker shutdown) or the timeout stops it. It returns ctx's error when
// ctx ended, so the runtime decides what that means for the task.
func (r *runner) run(ctx context.Context, c *worker.Call, argv []string, d runDir) (*proto.CallToolResult, error) {
	name := r.spec.Name
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if r.spec.Timeout > 0 {
		rctx, cancel = context.WithTimeout(ctx, r.spec.Timeout)
	}
	defer cancel()
	stdout, err := os.Create(d.stdout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer stdout.Close()
	stderr, err := os.Create(d.stderr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer stderr.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer pr.Close()
	tr := r.trees.prepare(c.TaskID, c.Attempt)
	defer tr.release()
	newCmd := func() *exec.Cmd {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = r.spec.Dir
		cmd.Env = r.environ(c, d)
		cmd.Stdout, cmd.Stderr = stdout, stderr // files: no pipe a child could hold Wait up on
		cmd.ExtraFiles = []*os.File{pw}         // descriptor 3 (statusFD)
		cmd.SysProcAttr = tr.attr()
		return cmd
	}
	cmd := newCmd()
	err = cmd.Start()
	if err != nil && tr.dropCgroupToRetry() {
		first := err
		cmd = newCmd()
		if err = cmd.Start(); err == nil {
			tr.cgroupRefused(first)
		}
	}
	pw.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: cannot start %s: %w", name, argv[0], err)
	}
	tr.started(cmd.Process.Pid)
	// A protocol line can end the run too: an input request that parks
	// the task (the program is stopped; it runs again once answered).
	pctx, end := context.WithCancelCause(rctx)
	defer end(nil)
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		r.readProtocol(ctx, c, pr, d, end)
	}()
	exited, reap := awaitExit(cmd)
	timedOut := false
	select {
	case <-exited:
	case <-pctx.Done():
		timedOut = ctx.Err() == nil && rctx.Err() != nil
		writeStop(d.stop, stopReason(ctx, rctx))
		r.stop(tr, exited)
	}
	tr.kill() // whatever is left of the group and the cgroup
	werr := reap()
	// Every line the program wrote is applied before the outcome. A
	// process that left the group and still holds the descriptor does not
	// hold the run up longer than the grace period.
	select {
	case <-lines:
	case <-time.After(r.spec.Grace):
		pr.Close()
		<-lines
	}
	var ended *endedBy
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(context.Cause(pctx), &ended):
		return nil, ended.err
	case timedOut:
		// A tool error that keeps what the program wrote so far.
		res := worker.ErrorResult(fmt.Sprintf("%s: timed out after %v and was stopped%s", name, r.spec.Timeout, tail(d.stderr)))
		if part, err := collectFiles(name, d, newFileStore(ctx, c, r.spec.Links)); err == nil {
			res.Content = append(res.Content, part.Content...)
		}
		return res, nil
	case werr != nil:
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			return nil, fmt.Errorf("%s: the program failed (%s)%s", name, ee.ProcessState, tail(d.stderr))
		}
		return nil, fmt.Errorf("%s: %w%s", name, werr, tail(d.stderr))
	}
	res, err := collect(name, d, newFileStore(ctx, c, r.spec.Links))
	if err != nil {
		return nil, err
	}
	if err := r.out.addStructured(res, d.structured); err != nil {
		return worker.ErrorResult(fmt.Sprintf("%s: %v", name, err)), nil
	}
	return res, nil
}

// stop sends SIGTERM to the program's group and waits for the program for
// the grace period; then SIGKILL goes to the run's tree (its group and its
// cgroup) and stop waits for the program's end (immediate: SIGKILL cannot
// be caught).
func (r *runner) stop(tr *tree, exited <-chan struct{}) {
	signalGroup(tr.pgid(), syscall.SIGTERM)
	t := time.NewTimer(r.spec.Grace)
	defer t.Stop()
	select {
	case <-exited:
		return
	case <-t.C:
	}
	tr.kill()
	<-exited
}

// environ is the program's environment: the worker's, less mcpq's own
// variables and REDIS_URL, then the spec's Env, then the protocol's.
func (r *runner) environ(c *worker.Call, d runDir) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, reservedEnvPrefix) || strings.HasPrefix(kv, "REDIS_URL=") {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range r.spec.Env {
		env = append(env, k+"="+v)
	}
	if d.scratch != "" {
		env = append(env, envScratch+"="+d.scratch)
	}
	env = append(env, envAllowNetworks+"="+strings.Join(r.spec.AllowNetworks, ","))
	return append(env, envArgs+"="+d.args, envOutput+"="+d.out, envCheckpoint+"="+d.checkpoint,
		envInput+"="+d.input, envStructured+"="+d.structured, envStop+"="+d.stop, envStatusFD+"="+strconv.Itoa(statusFD), envTaskID+"="+c.TaskID, envAttempt+"="+strconv.FormatInt(c.Attempt, 10))
}

// readProtocol applies the program's protocol lines until the descriptor
// closes. A line it cannot apply is logged and skipped; reading goes on,
// so the program never blocks on a full pipe.
func (r *runner) readProtocol(ctx context.Context, c *worker.Call, pr io.Reader, d runDir, end context.CancelCauseFunc) {
	br := bufio.NewReaderSize(pr, 64<<10)
	var line []byte
	tooLong := false
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) <= maxLine {
			line = append(line, frag...)
		} else {
			tooLong = true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			r.spec.Logger.Warn("command tool: protocol line longer than the limit skipped",
				"tool", r.spec.Name, "task", c.TaskID, "limit", maxLine)
		} else {
			r.apply(ctx, c, line, d, end)
		}
		line, tooLong = line[:0], false
		if err != nil {
			return
		}
	}
}

// endedBy is why a protocol line ended the run: the error the handler
// returns (the parking error of Call.Input, or what the request was refused for).
type endedBy struct{ err error }

func (e *endedBy) Error() string { return e.err.Error() }

// apply carries out one protocol line.
func (r *runner) apply(ctx context.Context, c *worker.Call, line []byte, d runDir, end context.CancelCauseFunc) {
	m, ok, err := parseLine(line)
	if err != nil {
		r.spec.Logger.Warn("command tool: malformed protocol line skipped", "tool", r.spec.Name, "task", c.TaskID,
			"err", err, "line", truncate(string(line), 200))
		return
	}
	if !ok {
		return
	}
	switch {
	case m.Status != nil:
		err = c.Progress(ctx, *m.Status)
	case m.Progress != nil:
		if err = c.ReportProgress(ctx, *m.Progress, m.Total, m.Text); err == nil {
			err = c.Progress(ctx, m.statusText())
		}
	case m.Checkpoint != nil:
		err = c.SaveCheckpoint(ctx, m.Checkpoint)
		var big *worker.CheckpointTooLargeError
		if errors.As(err, &big) {
			end(&endedBy{fmt.Errorf("%s: %w", r.spec.Name, err)})
			return
		}
	case m.Usage > 0:
		err = c.Meter(ctx, m.Usage)
	case m.Input != nil:
		err = r.input(ctx, c, m.Input, d)
		if err != nil {
			end(&endedBy{err})
			return
		}
	}
	if err != nil && ctx.Err() == nil {
		r.spec.Logger.Warn("command tool: protocol line not applied", "tool", r.spec.Name, "task", c.TaskID, "err", err)
	}
}

// input asks the client for an input line's request. When the answer is
// there, it is written (atomically) to the input folder as <key>.json;
// otherwise Call.Input parked the task and input returns its error, which
// ends the run: the program is stopped and runs again once answered.
func (r *runner) input(ctx context.Context, c *worker.Call, in *inputLine, d runDir) error {
	req := proto.InputRequest{Method: in.Method}
	if len(in.Params) > 0 {
		req.Params = in.Params
	}
	answers, err := c.Input(ctx, map[string]proto.InputRequest{in.Key: req})
	if err != nil {
		return err
	}
	tmp := filepath.Join(d.root, "answer.tmp")
	if err := os.WriteFile(tmp, answers[in.Key], 0o600); err != nil {
		return fmt.Errorf("%s: cannot write the answer to %s: %w", r.spec.Name, in.Key, err)
	}
	if err := os.Rename(tmp, filepath.Join(d.input, in.Key+".json")); err != nil {
		return fmt.Errorf("%s: cannot write the answer to %s: %w", r.spec.Name, in.Key, err)
	}
	return nil
}

// tail is the end of the stderr file, as a suffix of a tool error's text.
func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return ""
	}
	off := max(fi.Size()-stderrTail, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	head := "stderr"
	if off > 0 {
		head = fmt.Sprintf("stderr (last %d bytes)", len(b))
	}
	return "\n" + head + ":\n" + strings.ToValidUTF8(strings.TrimRight(string(b), "\n"), "\uFFFD")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
