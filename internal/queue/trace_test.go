package queue

import (
	"context"
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
		if err := enqueue(ctx, &enq, Keys{}, Job{Ref: ref, Tool: "echo", Queue: "q"}, time.Hour, 0); err != nil {
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
		if err := enqueue(context.Background(), &plainEnq, Keys{}, Job{Ref: ref, Tool: "echo", Queue: "q"}, time.Hour, 0); err != nil {
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
