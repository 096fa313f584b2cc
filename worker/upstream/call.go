package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// mark is the checkpoint an upstream call leaves before it starts, so a
// delivery after a lost worker knows the upstream may have run it; and,
// once the upstream answered with a task of its own, that task's id, so
// the delivery follows it instead (follow.go).
type mark struct {
	Called bool   `json:"upstreamCalled"`
	Task   string `json:"upstreamTask,omitempty"`
}

// handler calls the upstream tool u. rerun says whether a call whose
// worker was lost may be run again (docs/tools.md, "Upstream MCP servers").
func (s *Server) handler(u upstreamTool, rerun bool, timeout time.Duration) worker.Handler {
	return func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
		var m mark
		if ok, _ := c.LoadCheckpoint(&m); ok && m.Called && m.Task == "" && !rerun {
			return nil, proto.NewError(proto.CodeInternalError,
				"the worker calling upstream tool %s of %s was lost during the call; it is not run again because the upstream does not declare it idempotentHint or readOnlyHint and the configuration does not say rerun: true",
				u.Name, s.spec.Name)
		}
		if m.Task == "" {
			if err := c.SaveCheckpoint(ctx, mark{Called: true}); err != nil {
				return nil, err
			}
		}
		var res *proto.CallToolResult
		err := c.Step(ctx, func(ctx context.Context) error {
			var err error
			res, err = s.call(ctx, c, u, timeout, m.Task)
			return err
		})
		if errors.Is(err, worker.ErrCancelled) {
			s.cancelTask(c)
		}
		if err == nil {
			if lerr := s.link(ctx, c, res); lerr != nil {
				s.log.Warn("linked resources not made readable", "task", c.TaskID, "err", lerr)
			}
		}
		return res, err
	}
}

// call runs one tools/call of u on a pool slot, or follows the upstream
// task it made (taskID, from the checkpoint).
func (s *Server) call(ctx context.Context, c *worker.Call, u upstreamTool, timeout time.Duration, taskID string) (*proto.CallToolResult, error) {
	sl, sess, err := s.pool.take(ctx)
	if sl != nil {
		defer s.pool.release(sl)
	}
	if err != nil {
		return nil, err
	}
	prog := newProgress(c)
	defer sess.onProgress(c.TaskID, prog.set)()
	defer sess.onRequest(relay(ctx, c))()
	logs := newLogRelay(c)
	defer sess.onLog(logs.add)()
	if h, ok := sess.t.(*httpTransport); ok && s.spec.PrincipalHeader != "" {
		defer h.forward(c.Principal())()
	}
	stop, stopRelays := context.WithCancel(ctx) // the relays' goroutines end with it
	defer stopRelays()
	progDone := make(chan struct{})
	logsDone := make(chan struct{})
	go func() {
		defer close(progDone)
		prog.run(ctx, stop.Done())
	}()
	go func() {
		defer close(logsDone)
		logs.run(ctx, stop.Done())
	}()
	cctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var res *proto.CallToolResult
	if taskID != "" {
		res, err = s.follow(cctx, c, sess, taskID, minPoll)
	} else {
		res, err = s.callTool(ctx, cctx, c, sl, sess, u, timeout)
	}
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		// An upstream task past the timeout (a plain call's is callError's).
		s.cancelOn(ctx, sess, c)
		return nil, fmt.Errorf("upstream %s: tool %s did not end within %s", s.spec.Name, u.Name, timeout)
	}
	if err != nil {
		return nil, err
	}
	stopRelays()
	<-progDone
	<-logsDone
	logs.flush(ctx) // the last log messages and progress, before the result
	prog.flush(ctx)
	return res, nil
}

// callTool sends the tools/call; an answer that is an upstream task is
// kept in the checkpoint and followed.
func (s *Server) callTool(ctx, cctx context.Context, c *worker.Call, sl *slot, sess *session, u upstreamTool,
	timeout time.Duration) (*proto.CallToolResult, error) {
	args := c.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	params := map[string]any{"name": u.Name, "arguments": args}
	if u.taskable() && sess.version == VersionLegacy {
		params["task"] = map[string]any{}
	}
	meta := map[string]any{proto.MetaProgressToken: c.TaskID}
	if sess.version == VersionStateless {
		// Every log message of the call, which the front end filters by
		// the level its client asked for (logs.go).
		meta[proto.MetaLogLevel] = "debug"
	}
	if s.spec.PrincipalMeta != "" {
		meta[s.spec.PrincipalMeta] = c.Principal()
	}
	var raw json.RawMessage
	for round := 1; ; round++ {
		var id json.RawMessage
		var err error
		raw, err = sess.request(cctx, proto.MethodToolsCall, params, meta, &id)
		if err != nil {
			return nil, s.callError(ctx, cctx, sl, sess, id, u.Name, timeout, err)
		}
		in, ok := inputOf(raw)
		if !ok || round > maxInputRounds {
			break
		}
		// A 2026-07-28 upstream asks for input first (an input_required
		// result): ask the client, then call again with the answers.
		resp, err := s.askClient(cctx, c, fmt.Sprintf("upstream-%d-r%d-", c.Attempt, round), in.InputRequests)
		if err != nil {
			return nil, err
		}
		params["inputResponses"] = resp
		if in.RequestState != "" {
			params["requestState"] = in.RequestState
		} else {
			delete(params, "requestState")
		}
	}
	t, ok := taskOf(raw)
	if !ok {
		return s.decodeResult("tool "+u.Name, raw)
	}
	if err := c.SaveCheckpoint(ctx, mark{Called: true, Task: t.TaskID}); err != nil {
		return nil, err
	}
	return s.follow(cctx, c, sess, t.TaskID, t.poll())
}

// maxInputRounds bounds the input_required rounds of one upstream call.
const maxInputRounds = 16

// inputOf reads an input_required result (2026-07-28 multi-round input).
func inputOf(raw json.RawMessage) (*proto.InputRequiredResult, bool) {
	var r proto.InputRequiredResult
	if json.Unmarshal(raw, &r) != nil || r.ResultType != proto.ResultInputRequired || len(r.InputRequests) == 0 {
		return nil, false
	}
	return &r, true
}

// callError turns a failed request into the handler's error: a cancel or
// timeout sends notifications/cancelled upstream (a timed-out session is
// ended, since a hung one would hold its slot); a protocol error from the
// upstream ends the task failed; a broken session is started again by the
// next call, and the error carries its stderr's tail.
func (s *Server) callError(ctx, cctx context.Context, sl *slot, sess *session, id json.RawMessage,
	name string, timeout time.Duration, err error) error {
	var perr *proto.Error
	switch {
	case cctx.Err() != nil && len(id) > 0:
		reqID, _ := strconv.ParseInt(string(id), 10, 64)
		reason := "the task was cancelled"
		if ctx.Err() == nil {
			reason = fmt.Sprintf("timed out after %s", timeout)
		}
		if nerr := sess.t.notify(proto.NotifyCancelled, map[string]any{"requestId": reqID, "reason": reason}); nerr != nil {
			s.log.Warn("send notifications/cancelled", "err", nerr)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sl.reset()
		return fmt.Errorf("upstream %s: tool %s did not answer within %s", s.spec.Name, name, timeout)
	case errors.As(err, &perr):
		return perr
	}
	select {
	case <-sess.t.done():
		sl.reset()
	default:
	}
	return err
}

// progress forwards the upstream's notifications/progress: the latest one
// into the task's statusMessage at most every progressEvery, and each one
// to a 2025-11-25 client holding the call as notifications/progress, up to
// progressQueue per progressEvery (past that, the latest replaces the last
// queued), so a flood of notifications costs a bounded number of writes.
type progress struct {
	c     *worker.Call
	mu    sync.Mutex
	last  *proto.ProgressParams
	notes []proto.ProgressParams
	kick  chan struct{}
}

// progressQueue is how many notifications a client holding the call gets
// per progressEvery at most.
const progressQueue = 16

func newProgress(c *worker.Call) *progress { return &progress{c: c, kick: make(chan struct{}, 1)} }

func (p *progress) set(pp proto.ProgressParams) {
	p.mu.Lock()
	p.last = &pp
	if len(p.notes) < progressQueue {
		p.notes = append(p.notes, pp)
	} else {
		p.notes[len(p.notes)-1] = pp
	}
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run writes what set gave, at most once per progressEvery, until stop
// closes (or ctx ends); like logRelay.run it writes with ctx, the call's.
func (p *progress) run(ctx context.Context, stop <-chan struct{}) {
	pause := time.NewTimer(progressEvery)
	pause.Stop()
	defer pause.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-p.kick:
		}
		p.flush(ctx)
		pause.Reset(progressEvery)
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-pause.C:
		}
	}
}

// flush writes the latest progress and forwards the queued notifications.
func (p *progress) flush(ctx context.Context) {
	p.mu.Lock()
	pp, notes := p.last, p.notes
	p.last, p.notes = nil, nil
	p.mu.Unlock()
	if pp != nil {
		_ = p.c.Progress(ctx, statusText(pp))
	}
	for _, n := range notes {
		total := 0.0
		if n.Total != nil {
			total = *n.Total
		}
		_ = p.c.ReportProgress(ctx, n.Progress, total, n.Message)
	}
}

// statusText is the statusMessage of an upstream progress notification.
func statusText(p *proto.ProgressParams) string {
	switch {
	case p.Message != "":
		return p.Message
	case p.Total != nil:
		return fmt.Sprintf("%g of %g", p.Progress, *p.Total)
	}
	return fmt.Sprintf("%g", p.Progress)
}
