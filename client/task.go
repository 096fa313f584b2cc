package client

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/mcpq/mcpq/proto"
)

// Handle is a client's hold on one task. Dropping it (or cancelling the
// context of Follow or Wait) leaves the task running on the server: only
// Cancel stops it. With a Journal the handle is re-created by Resume.
type Handle struct {
	c *Client
	// ID is the task id.
	ID string
	// Tool is the tool the task runs ("" when not known, e.g. from Attach).
	Tool string

	mu      sync.Mutex
	last    proto.GetTaskResult
	answers map[string]json.RawMessage // input keys answered (or restored from the journal)
}

// handle makes the Handle of a task just handed out.
func (c *Client) handle(t proto.Task, tool string) *Handle {
	h := &Handle{c: c, ID: t.TaskID, Tool: tool, answers: map[string]json.RawMessage{}}
	h.last.Task = t
	return h
}

// Attach is a Handle on an existing task id (its state unknown until the
// first Get or Follow). Input keys answered before are in answered (may be nil).
func (c *Client) Attach(id, tool string, answered map[string]json.RawMessage) *Handle {
	h := c.handle(proto.Task{TaskID: id}, tool)
	for k, v := range answered {
		h.answers[k] = v
	}
	return h
}

// Last is the latest state seen.
func (h *Handle) Last() proto.GetTaskResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// Get calls tasks/get once and records the state.
func (h *Handle) Get(ctx context.Context) (*proto.GetTaskResult, error) {
	g, err := h.c.GetTask(ctx, h.ID)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.last = *g
	h.mu.Unlock()
	return g, nil
}

// Cancel asks the server to cancel the task (cooperative: Follow then sees
// the final state, which may still be completed).
func (h *Handle) Cancel(ctx context.Context) error {
	_, err := h.c.CancelTask(ctx, h.ID)
	return err
}

// Forget removes the task from the client's journal (after its result was
// delivered, or to stop resuming it).
func (h *Handle) Forget(ctx context.Context) error {
	if h.c.Journal == nil {
		return nil
	}
	return h.c.Journal.Delete(ctx, h.c.URL, h.ID)
}

// Follow tracks the task until it is terminal and returns its final state.
// It follows notifications/tasks over subscriptions/listen and falls back
// to polling tasks/get (at pollIntervalMs, jittered, backing off on
// errors) when listening fails or its stream ends. onChange, if set, sees
// every new state (status, message or input requests changed). Pending
// input requests go to the client's Input func, each key at most once;
// without one, Follow keeps waiting for someone else to answer. A task the
// server no longer knows ends Follow with ErrTaskGone. Cancelling ctx
// stops following; the task keeps running.
func (h *Handle) Follow(ctx context.Context, onChange func(*proto.GetTaskResult)) (*proto.GetTaskResult, error) {
	f := &follower{h: h, onChange: onChange}
	if !h.c.NoListen {
		g, err := f.listen(ctx)
		if g != nil || err != nil {
			return g, err
		}
	}
	return f.poll(ctx)
}

// Wait follows the task and gives exactly what the synchronous tools/call
// would have: the tool's result (isError included) for a completed task,
// the task's JSON-RPC error as an *RPCError for a failed one, ErrCancelled
// for a cancelled one. Once it returns a final answer the task is dropped
// from the journal.
func (h *Handle) Wait(ctx context.Context) (*proto.CallToolResult, error) {
	g, err := h.Follow(ctx, nil)
	if err != nil {
		if errors.Is(err, ErrTaskGone) {
			_ = h.Forget(ctx)
		}
		return nil, err
	}
	res, err := Outcome(g)
	if ferr := h.Forget(ctx); ferr != nil && err == nil {
		return res, ferr
	}
	return res, err
}

// Outcome is the synchronous answer a terminal task stands for (see Wait).
func Outcome(g *proto.GetTaskResult) (*proto.CallToolResult, error) {
	switch g.Status {
	case proto.StatusCompleted:
		var r proto.CallToolResult
		if err := json.Unmarshal(g.Result, &r); err != nil {
			return nil, err
		}
		return &r, nil
	case proto.StatusFailed:
		e := g.Error
		if e == nil {
			e = &proto.Error{Code: proto.CodeInternalError, Message: "task failed without an error"}
		}
		return nil, &RPCError{RPC: e}
	case proto.StatusCancelled:
		return nil, ErrCancelled
	}
	return nil, errors.New("task is not finished: " + string(g.Status))
}

// follower is one Follow of a Handle.
type follower struct {
	h        *Handle
	onChange func(*proto.GetTaskResult)
	seen     string // fingerprint of the last state shown
	answered bool   // see sent answers: poll again at once, the next step follows them
}

// see handles one state: it reports it, answers pending input, and says
// whether the task is done.
func (f *follower) see(ctx context.Context, g *proto.GetTaskResult) (bool, error) {
	f.h.mu.Lock()
	f.h.last = *g
	f.h.mu.Unlock()
	fp := string(g.Status) + "\x00" + g.StatusMessage + "\x00" + string(mustJSON(sortedKeys(g.InputRequests)))
	if fp != f.seen {
		f.seen = fp
		if f.onChange != nil {
			f.onChange(g)
		}
	}
	if g.Status.Terminal() {
		return true, nil
	}
	if g.Status == proto.StatusInputRequired && len(g.InputRequests) > 0 {
		sent, err := f.h.answer(ctx, g.InputRequests)
		f.answered = sent
		return false, err
	}
	return false, nil
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// listen follows the task over subscriptions/listen. It returns (nil, nil)
// when the caller should fall back to polling.
func (f *follower) listen(ctx context.Context) (*proto.GetTaskResult, error) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l, err := f.h.c.Listen(lctx, map[string]any{"taskIds": []string{f.h.ID}})
	if err != nil {
		return nil, ctx.Err()
	}
	acked := false
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case m, ok := <-l.C:
			if !ok || m.Error != nil || len(m.ID) > 0 {
				return nil, ctx.Err() // the stream ended: poll
			}
			switch m.Method {
			case proto.NotifySubscribed:
				// Changes before the subscription were not sent: read the
				// state once now.
				acked = true
				g, err := f.h.c.GetTask(ctx, f.h.ID)
				if err != nil {
					if errors.Is(err, CodeInvalidParams) {
						return nil, ErrTaskGone
					}
					return nil, ctx.Err()
				}
				if done, err := f.see(ctx, g); done || err != nil {
					return g, err
				}
			case proto.NotifyTasks:
				if !acked {
					continue
				}
				var g proto.GetTaskResult
				if json.Unmarshal(m.Params, &g) != nil || g.TaskID != f.h.ID {
					continue
				}
				if done, err := f.see(ctx, &g); done || err != nil {
					return &g, err
				}
			}
		}
	}
}

// poll follows the task with tasks/get.
func (f *follower) poll(ctx context.Context) (*proto.GetTaskResult, error) {
	c := f.h.c
	lo, hi := c.Poll.Min, c.Poll.Max
	if lo <= 0 {
		lo = 50 * time.Millisecond
	}
	if hi <= 0 {
		hi = 30 * time.Second
	}
	backoff := time.Duration(0)
	for {
		g, err := c.GetTask(ctx, f.h.ID)
		var wait time.Duration
		switch {
		case err == nil:
			backoff = 0
			done, err := f.see(ctx, g)
			if done || err != nil {
				return g, err
			}
			wait = time.Second
			if g.PollIntervalMs != nil {
				wait = time.Duration(*g.PollIntervalMs) * time.Millisecond
			}
			if f.answered {
				wait, f.answered = lo, false
			}
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, CodeInvalidParams):
			return nil, ErrTaskGone
		case !temporary(err):
			return nil, err
		default:
			backoff = max(lo, min(2*backoff+lo, hi))
			wait = backoff
		}
		wait = min(max(wait, lo), hi)
		wait = time.Duration(float64(wait) * (0.9 + 0.2*rand.Float64()))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
