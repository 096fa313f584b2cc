package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpq/mcpq/taskstate"
)

// TestTraceInPayload: an enqueue writes the trace context of its ctx's span
// into the payload, Decode still reads the Ref, and Trace gives a worker
// that trace context as the remote parent.
func TestTraceInPayload(t *testing.T) {
	t.Parallel()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	for _, ref := range []taskstate.Ref{{Owner: "p1", ID: "abc"}, {Owner: `we"ird`, ID: "ünï"}} {
		var enq capture
		ctx := trace.ContextWithSpanContext(context.Background(), sc)
		if err := enqueue(ctx, &enq, "q", Job{Ref: ref, Tool: "echo", Queue: "q"}, time.Hour, 0); err != nil {
			t.Fatal(err)
		}
		if got, tool, err := Decode(enq.payload); err != nil || got != ref || tool != "echo" {
			t.Fatalf("Decode(%s) = %+v, %v; want %+v", enq.payload, got, err, ref)
		}
		got := trace.SpanContextFromContext(Trace(context.Background(), enq.payload))
		if got.TraceID() != tid || got.SpanID() != sid || !got.IsRemote() || !got.IsSampled() {
			t.Errorf("Trace(%s) = %+v, want remote %s/%s sampled", enq.payload, got, tid, sid)
		}
		var plainEnq capture // no span: the payload is Payload's
		if err := enqueue(context.Background(), &plainEnq, "q", Job{Ref: ref, Tool: "echo", Queue: "q"}, time.Hour, 0); err != nil {
			t.Fatal(err)
		}
		if want := Payload(Job{Ref: ref, Tool: "echo"}); string(plainEnq.payload) != string(want) {
			t.Errorf("enqueue without a span wrote %s, want %s", plainEnq.payload, want)
		}
		if sc := trace.SpanContextFromContext(Trace(context.Background(), plainEnq.payload)); sc.IsValid() {
			t.Errorf("Trace of a payload without tp = %+v", sc)
		}
	}
	// A bad traceparent is no parent, and the Ref still reads.
	bad := []byte(`{"o":"p1","id":"x","tp":"00-zz-yy-01"}`)
	if sc := trace.SpanContextFromContext(Trace(context.Background(), bad)); sc.IsValid() {
		t.Errorf("Trace of a bad tp = %+v", sc)
	}
	if got, _, err := Decode(bad); err != nil || got != (taskstate.Ref{Owner: "p1", ID: "x"}) {
		t.Errorf("Decode(%s) = %+v, %v", bad, got, err)
	}
}

// capture is an enqueuer that keeps the last payload.
type capture struct{ payload []byte }

func (c *capture) EnqueueContext(_ context.Context, task *asynq.Task, _ ...asynq.Option) (*asynq.TaskInfo, error) {
	c.payload = task.Payload()
	return &asynq.TaskInfo{}, nil
}

// options is an enqueuer that keeps the options of the last enqueue and
// answers err.
type options struct {
	opts map[asynq.OptionType]any
	err  error
}

func (o *options) EnqueueContext(_ context.Context, _ *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	o.opts = map[asynq.OptionType]any{}
	for _, op := range opts {
		o.opts[op.Type()] = op.Value()
	}
	return &asynq.TaskInfo{}, o.err
}

// TestEnqueueOptions: every enqueue names the job by task and number, puts
// it on its queue under the prefix, lets asynq retry it, and sets asynq's
// timeout, a backstop, beyond any TTL a handler can extend to (maxTTL);
// a delayed one waits. A job already queued (an id conflict) is no error.
func TestEnqueueOptions(t *testing.T) {
	t.Parallel()
	ref := taskstate.Ref{Owner: "p1", ID: "abc"}
	k := Keys{Prefix: "mcpq:"}
	var o options
	if err := enqueue(context.Background(), &o, k.Queue("gpu"), Job{Ref: ref, Tool: "echo", Seq: 2, Queue: "gpu"}, 24*time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	if o.opts[asynq.TaskIDOpt] != "abc#2" || o.opts[asynq.QueueOpt] != "mcpq:gpu" {
		t.Errorf("options %v, want TaskID abc#2 and Queue mcpq:gpu", o.opts)
	}
	if d, _ := o.opts[asynq.TimeoutOpt].(time.Duration); d <= 24*time.Hour {
		t.Errorf("timeout %v, want more than MaxTTL (24h)", o.opts[asynq.TimeoutOpt])
	}
	if n, _ := o.opts[asynq.MaxRetryOpt].(int); n < 1 {
		t.Errorf("MaxRetry %v, want retries", o.opts[asynq.MaxRetryOpt])
	}
	if _, delayed := o.opts[asynq.ProcessInOpt]; delayed {
		t.Errorf("an enqueue without a delay has ProcessIn %v", o.opts[asynq.ProcessInOpt])
	}
	if err := enqueue(context.Background(), &o, k.Queue("gpu"), Job{Ref: ref, Queue: "gpu"}, time.Hour, time.Second); err != nil {
		t.Fatal(err)
	}
	if d, _ := o.opts[asynq.ProcessInOpt].(time.Duration); d != time.Second {
		t.Errorf("a delayed enqueue has ProcessIn %v, want 1s", o.opts[asynq.ProcessInOpt])
	}
	o.err = fmt.Errorf("wrapped: %w", asynq.ErrTaskIDConflict)
	if err := enqueue(context.Background(), &o, k.Queue("gpu"), Job{Ref: ref, Queue: "gpu"}, time.Hour, 0); err != nil {
		t.Errorf("an id conflict: %v, want nil", err)
	}
	o.err = errors.New("broker down")
	if err := enqueue(context.Background(), &o, k.Queue("gpu"), Job{Ref: ref, Queue: "gpu"}, time.Hour, 0); err == nil {
		t.Error("a failed enqueue answered nil")
	}
}
