package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// errParked unwinds a handler that asked for input: the task waits in
// input_required without holding a worker slot, and its job runs again from
// the start (with the answers) once every request is answered.
var errParked = errors.New("worker: task parked for input")

// Input asks the client for input: one or more keyed requests, each an
// elicitation (proto.MethodElicit), sampling or roots request. When every
// key has an answer, Input returns the answers. Otherwise the task moves to
// input_required and Input returns an error the handler must return as is;
// the handler then runs again from the start once the client answered (keep
// expensive work behind SaveCheckpoint or Step results). Keys are unique for
// the task's life: a new round of questions needs new keys.
//
// A request the creating client declared no capability for is not asked:
// Input returns a -32021 error naming the missing capabilities. Once Input
// has parked the task, the runtime leaves it waiting whatever the handler
// returns, so a handler that wraps the parking error into a result cannot
// complete the task over its pending input.
func (c *Call) Input(ctx context.Context, reqs map[string]proto.InputRequest) (map[string]json.RawMessage, error) {
	if c.parked {
		return nil, errParked
	}
	answers, ask, err := c.inputRound(reqs)
	if err != nil || len(ask) == 0 {
		return answers, err
	}
	if err := inputErr(c.stateErr(c.store.RequestInput(ctx, c.ref, c.Attempt, ask))); err != nil {
		return nil, err
	}
	c.parked = true
	return nil, errParked
}

// inputRound splits reqs into the keys the task has answers for (answers)
// and the requests still to ask (ask, JSON), refusing kinds the creating
// client did not declare (-32021) and a task whose cancel was requested.
func (c *Call) inputRound(reqs map[string]proto.InputRequest) (answers, ask map[string]json.RawMessage, err error) {
	if len(reqs) == 0 {
		return nil, nil, errors.New("worker: input needs at least one request")
	}
	answers, ask = map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for k, r := range reqs {
		if a, ok := c.record.Answers[k]; ok {
			answers[k] = a
			continue
		}
		b, err := json.Marshal(r)
		if err != nil {
			return nil, nil, fmt.Errorf("worker: input request %q: %w", k, err)
		}
		ask[k] = b
	}
	if len(ask) == 0 {
		return answers, nil, nil
	}
	methods := make([]string, 0, len(reqs))
	for _, r := range reqs {
		methods = append(methods, r.Method)
	}
	if err := proto.MissingInputCapabilities(c.Capabilities(), methods); err != nil {
		return nil, nil, err
	}
	if c.cancelRequested() {
		return nil, nil, ErrCancelled
	}
	return answers, ask, nil
}

// inputErr says what a refused key means.
func inputErr(err error) error {
	if errors.Is(err, taskstate.ErrKeyReused) {
		return fmt.Errorf("worker: input request keys must be new for each round: %w", err)
	}
	return err
}

// Capabilities are the client capabilities of the request that created the
// task (decoded once per delivery). Input asks only for kinds they cover.
func (c *Call) Capabilities() proto.ClientCapabilities {
	c.capsOnce.Do(func() { _ = json.Unmarshal(c.record.Capabilities, &c.caps) })
	return c.caps
}

// SaveCheckpoint stores v (JSON) as the handler's checkpoint: a handler that
// runs again (after input, or a re-delivery) reads it with LoadCheckpoint.
func (c *Call) SaveCheckpoint(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxCheckpointBytes {
		return &CheckpointTooLargeError{Size: len(b)}
	}
	if err := c.outlast(ctx, func(ctx context.Context) error { return c.store.SaveCheckpoint(ctx, c.ref, c.Attempt, b) }); err != nil {
		return err
	}
	c.record.Checkpoint = b
	return nil
}

// LoadCheckpoint decodes the last saved checkpoint into v and reports
// whether there was one.
func (c *Call) LoadCheckpoint(v any) (bool, error) {
	if len(c.record.Checkpoint) == 0 {
		return false, nil
	}
	return true, json.Unmarshal(c.record.Checkpoint, v)
}

// ReportProgress sends notifications/progress to a client waiting on the
// call that asked for progress (it carries a progressToken). Tasks have no
// progress notifications: use Progress (statusMessage) for them.
func (c *Call) ReportProgress(ctx context.Context, progress, total float64, message string) error {
	p := proto.ProgressParams{Progress: progress, Message: message}
	if total > 0 {
		p.Total = &total
	}
	return c.notify(ctx, proto.NotifyProgress, p)
}

// Log sends notifications/message to a client waiting on the call, when it
// asked for logs at level or below.
func (c *Call) Log(ctx context.Context, level proto.LoggingLevel, data any) error {
	return c.notify(ctx, proto.NotifyMessage, proto.LoggingMessageParams{Level: level, Data: data, Logger: c.tool})
}

func (c *Call) notify(ctx context.Context, method string, params any) error {
	b, err := json.Marshal(proto.Notification{JSONRPC: proto.JSONRPCVersion, Method: method, Params: params})
	if err != nil {
		return err
	}
	return c.store.Notify(ctx, c.ref, b)
}

// ExtendTTL sets the task's ttlMs to ttl (counted from its creation, capped
// by Config.MaxTTL), e.g. before waiting for a person. tasks/get shows the
// new value.
func (c *Call) ExtendTTL(ctx context.Context, ttl time.Duration) error {
	return c.stateErr(c.store.SetTTL(ctx, c.ref, c.Attempt, min(ttl, c.worker.cfg.MaxTTL)))
}
