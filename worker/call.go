package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// ErrCancelled is returned by Call.Step once the task's cancellation was
// requested; a handler returns it (or an error wrapping it) to end the task
// cancelled.
var ErrCancelled = errors.New("worker: task cancelled")

// errStop means the task is no longer this attempt's to run (a newer
// attempt took it, it ended or expired): the runtime writes nothing more.
var errStop = errors.New("worker: task no longer owned by this attempt")

// Call is one running tool call: its arguments and the step API.
type Call struct {
	// TaskID is the task's id.
	TaskID string
	// Attempt is this delivery's attempt number.
	Attempt int64
	// Arguments is the arguments object.
	Arguments json.RawMessage

	ref    taskstate.Ref
	tool   string
	record *taskstate.Record // as claimed: answers, checkpoint, capabilities
	store  *taskstate.Store
	cancel <-chan struct{} // closed when cancellation is requested
	worker *Worker
	// parked is set once Input moved the task to input_required: the
	// delivery then ends without writing, whatever the handler returns.
	parked   bool
	capsOnce sync.Once
	caps     proto.ClientCapabilities
}

// Principal is the name of the principal that created the task (an API
// key's principal, or the anonymous one where that is enabled). Send it
// to another service only where its operator asks for it: it names the
// caller, it is no credential.
func (c *Call) Principal() string { return c.record.Principal }

// Worker is the worker running the call, for handlers that change what it
// serves (AddTool, AddPrompt, ResourceUpdated).
func (c *Call) Worker() *Worker { return c.worker }

// Bind decodes the arguments into v. Its error is a -32602 protocol error,
// so a handler can return it as is.
func (c *Call) Bind(v any) error {
	if err := json.Unmarshal(c.Arguments, v); err != nil {
		return proto.NewError(proto.CodeInvalidParams, "Invalid arguments: %v", err)
	}
	return nil
}

// Step runs fn as one step of the handler. Before it, the runtime
// heartbeats and checks the cancel flag and TTL: when cancellation was
// requested Step returns ErrCancelled without running fn. fn's context is
// cancelled as soon as a cancel request arrives, and Step then returns
// ErrCancelled whatever fn returned.
func (c *Call) Step(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := c.check(ctx); err != nil {
		return err
	}
	ctx, span := c.worker.startSpan(ctx, "mcpq.step")
	defer span.End()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-c.cancel:
			stop()
		case <-sctx.Done():
		}
	}()
	err := fn(sctx)
	if c.cancelRequested() {
		span.SetStatus(codes.Error, "cancelled")
		return ErrCancelled
	}
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// Progress sets the task's statusMessage.
func (c *Call) Progress(ctx context.Context, message string) error {
	return c.outlast(ctx, func(ctx context.Context) error { return c.store.Progress(ctx, c.ref, c.Attempt, message) })
}

// Meter reports units of metered usage of the call so far (added to what
// it reported before; docs/billing.md). Where billing is on and the tool
// has a Price, the task is charged its usage when it completes, is
// cancelled or expires, never more than it reserved: usage past the
// reservation is logged and not charged. Elsewhere Meter writes nothing.
func (c *Call) Meter(ctx context.Context, units int64) error {
	if units <= 0 || units > proto.MaxAmount {
		return fmt.Errorf("worker: usage must be 1 to %d units, got %d", int64(proto.MaxAmount), units)
	}
	usage, reserved, err := c.store.Meter(ctx, c.ref, c.Attempt, units)
	if err != nil {
		return c.stateErr(err)
	}
	if reserved >= 0 && usage > reserved && usage-units <= reserved && c.worker != nil {
		c.worker.log.Warn("metered usage is past the reservation: only the reservation is charged",
			"task", c.TaskID, "tool", c.tool, "usage", usage, "reserved", reserved)
	}
	return nil
}

// check is the between-steps check: signal first (no I/O), then the record.
func (c *Call) check(ctx context.Context) error {
	if c.cancelRequested() {
		return ErrCancelled
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.outlast(ctx, func(ctx context.Context) error {
		err := c.store.Heartbeat(ctx, c.ref, c.Attempt)
		if err == nil || errors.Is(err, taskstate.ErrCancelled) {
			c.worker.metrics.heartbeats.Inc()
		}
		return err
	})
}

func (c *Call) cancelRequested() bool {
	select {
	case <-c.cancel:
		return true
	default:
		return false
	}
}

// stateErr maps taskstate refusals to what a handler sees. Anything else
// (Redis unreachable, say) is transient: the job is delivered again rather
// than the failure being shown to the client as the tool's error.
func (c *Call) stateErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, taskstate.ErrCancelled):
		return ErrCancelled
	case taskstate.NotOwned(err):
		return errStop
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The job's context ended (cancel, expiry, shutdown): the runtime
		// knows which from the context's cause.
		if c.cancelRequested() {
			return ErrCancelled
		}
		return err
	}
	return &transientError{err}
}

// transientError is a store failure the job cannot get past: it is retried.
type transientError struct{ err error }

func (e *transientError) Error() string { return "worker: task store unavailable: " + e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// Sleep waits d, or returns ctx's error as soon as ctx ends (a cancel
// request ends a step's ctx). Handlers use it inside steps to pace or wait.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
