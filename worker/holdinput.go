package worker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpq/mcpq/proto"
)

// HoldInput asks the client for input as Input does, but waits for the
// answers while the delivery keeps running, for a handler that must keep
// something open meanwhile: an upstream MCP call whose session asked the
// question and waits for its answer on that session (package
// worker/upstream). The task shows input_required with the requests; the
// delivery keeps its worker slot and goes on heartbeating, so a tasks/cancel
// reaches it at once and a lost worker is taken over as for any running
// task (the pending requests are then dropped, and the handler runs again
// from the start on another worker).
//
// HoldInput returns the answers once every key has one. It returns
// ErrCancelled once a cancel was requested, and ctx's error when the run
// ends first (the task expired, the worker is stopping, the task was taken
// from this delivery): return either as is. Keys follow Input's rules (new
// for each round, -32021 for a kind the client did not declare). Unlike
// Input, HoldInput may run on any goroutine of the handler while a Step runs
// (pass the step's ctx), and several may wait at once under different keys.
// A held wait costs a worker slot for as long as the person takes: give the
// tool a TTL to match, as for any input.
func (c *Call) HoldInput(ctx context.Context, reqs map[string]proto.InputRequest) (map[string]json.RawMessage, error) {
	answers, ask, err := c.inputRound(reqs)
	if err != nil || len(ask) == 0 {
		return answers, err
	}
	// Subscribed before asking, so an answer given at once is not missed.
	var changed <-chan string
	if hub := c.worker.hub.Load(); hub != nil {
		sub, err := hub.Subscribe(ctx, c.store.Keys().Events(c.ref))
		if err != nil {
			return nil, c.stateErr(err)
		}
		defer sub.Close()
		changed = sub.C
	}
	if err := inputErr(c.stateErr(c.store.HoldInput(ctx, c.ref, c.Attempt, ask))); err != nil {
		return nil, err
	}
	got, err := c.awaitAnswers(ctx, changed, ask)
	if err != nil {
		return nil, err
	}
	for k, a := range got {
		answers[k] = a
	}
	return answers, nil
}

// awaitAnswers reads the record on each state change of the task (any
// payload, the hub's Resync included; and every HeartbeatInterval, should a
// change not be heard) until every key of ask
// has an answer.
func (c *Call) awaitAnswers(ctx context.Context, changed <-chan string, ask map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	for {
		rec, err := c.store.Get(ctx, c.ref)
		if err != nil {
			return nil, c.stateErr(err)
		}
		got := map[string]json.RawMessage{}
		for k := range ask {
			if a, ok := rec.Answers[k]; ok {
				got[k] = a
			}
		}
		switch {
		case len(got) == len(ask):
			return got, nil
		case rec.CancelRequested || c.cancelRequested():
			return nil, ErrCancelled
		case rec.Status.Terminal() || rec.Running != c.Attempt:
			return nil, errStop // ended, or taken from this delivery
		}
		if err := wake(ctx, changed, c.worker.cfg.HeartbeatInterval); err != nil {
			if c.cancelRequested() {
				return nil, ErrCancelled
			}
			return nil, err
		}
	}
}

// wake waits for a payload on changed, d, or ctx's end (its error).
func wake(ctx context.Context, changed <-chan string, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-changed:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
