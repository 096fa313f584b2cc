package e2e

// Operating mcpq (issue 17): the counters on /metrics of a front end and a
// worker match a scripted workload, and a client's traceparent makes one
// trace of the front end's request span and the worker's run and step
// spans.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/objstore"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/series"
	"github.com/mcpq/mcpq/worker"
)

// opsEnv is a front end (billing on: only priced tools touch an account)
// and a worker on one miniredis, each with its own metrics registry and
// /metrics, sharing an in-memory span recorder.
type opsEnv struct {
	c                *client.Client
	feURL, workerURL string // base URLs
	spans            *tracetest.InMemoryExporter
	store            *taskstate.Store // the same Redis, for accounts
	redis            *redistest.Backend
}

// Tools of the workload.
const (
	opsQuick = "ops_quick" // task: one step, completes
	opsFail  = "ops_fail"  // task: fails with a protocol error
	opsHold  = "ops_hold"  // task: one step that runs until cancelled
	opsAsk   = "ops_ask"   // task: asks "q", then completes
)

func newOpsEnv(t *testing.T, extra ...worker.Tool) *opsEnv {
	t.Helper()
	return newOpsEnvWith(t, nil, extra...)
}

// newOpsEnvWith is newOpsEnv whose worker and front end keep large
// results in blobs (nil: none).
func newOpsEnvWith(t *testing.T, blobs objstore.Store, extra ...worker.Tool) *opsEnv {
	t.Helper()
	b := redistest.Mini(t)
	logs := &syncLog{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	step := func(ctx context.Context, c *worker.Call, fn func(context.Context) error) error {
		return c.Step(ctx, fn)
	}
	tools := []worker.Tool{
		{Name: opsQuick, Policy: worker.PolicyTask, Handler: func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			if err := step(ctx, c, func(context.Context) error { return nil }); err != nil {
				return nil, err
			}
			return worker.TextResult("done"), nil
		}},
		{Name: opsFail, Policy: worker.PolicyTask, Handler: func(context.Context, *worker.Call) (*proto.CallToolResult, error) {
			return nil, proto.NewError(proto.CodeInternalError, "broken on purpose")
		}},
		{Name: opsHold, Policy: worker.PolicyTask, Handler: func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			// "holding" once the step's check (a heartbeat) is behind it, so
			// a cancel sent on seeing it cannot overtake the check.
			return nil, step(ctx, c, func(ctx context.Context) error {
				if err := c.Progress(ctx, "holding"); err != nil {
					return err
				}
				<-ctx.Done()
				return ctx.Err()
			})
		}},
		{Name: opsAsk, Policy: worker.PolicyTask, Handler: askOnce},
	}
	tools = append(tools, extra...)
	w, err := worker.New(worker.Config{Redis: b.Client, Prefix: b.Prefix,
		TaskCheckInterval: 5 * time.Millisecond, HeartbeatInterval: 20 * time.Millisecond,
		ShutdownTimeout: 2 * time.Second, Logger: log.With("proc", "worker"),
		Metrics: prometheus.NewRegistry(), TracerProvider: tp, Blobs: worker.BlobConfig{Store: blobs}}, tools...)
	if err != nil {
		t.Fatalf("worker.New: %v", err)
	}
	ws := httptest.NewServer(w.Handler())
	e := &opsEnv{spans: spans, workerURL: ws.URL, redis: b, store: taskstate.New(b.Client, taskstate.Options{Prefix: b.Prefix})}
	// Before Run: the worker is alive but not ready.
	if code := httpStatus(t, ws.URL+"/healthz"); code != http.StatusOK {
		t.Fatalf("worker /healthz before Run: %d", code)
	}
	if code := httpStatus(t, ws.URL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("worker /readyz before Run: %d, want 503", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	fe, err := frontend.New(frontend.Config{Redis: b.Client, Prefix: b.Prefix, Logger: log.With("proc", "frontend"),
		Metrics: prometheus.NewRegistry(), TracerProvider: tp, Billing: true, Blobs: blobs})
	if err != nil {
		cancel()
		t.Fatalf("frontend.New: %v", err)
	}
	fs := httptest.NewServer(fe.Handler())
	t.Cleanup(func() {
		fe.Drain()
		fs.Close()
		_ = fe.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(bound):
			t.Errorf("worker Run did not return within %v", bound)
		}
		ws.Close()
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	select {
	case <-w.Ready():
	case err := <-done:
		t.Fatalf("worker Run: %v", err)
	case <-time.After(bound):
		t.Fatal("worker not ready")
	}
	e.feURL = fs.URL
	e.c = taskClient(fs.URL + "/mcp")
	return e
}

// httpStatus GETs url and returns the status code.
func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// scrape GETs a /metrics page and parses it.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatalf("GET %s/metrics: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/metrics: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s/metrics: %v", url, err)
	}
	return fams
}

// sample is one metric's value (a counter's or gauge's value, a
// histogram's count) by its labels, written name{k="v",...} in label order.
func samples(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := name
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[key+"#count"] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

// getUntil polls tasks/get until the task's status is want, counting
// every tasks/get it sent in gets.
func (e *opsEnv) getUntil(t *testing.T, ctx context.Context, id string, want proto.TaskStatus, gets *int) *proto.GetTaskResult {
	t.Helper()
	for {
		g, err := e.c.GetTask(ctx, id)
		*gets++
		if err != nil {
			t.Fatalf("tasks/get %s: %v", id, err)
		}
		if g.Status == want {
			return g
		}
		if g.Status.Terminal() {
			t.Fatalf("task %s ended %s, want %s", id, g.Status, want)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s: %v waiting for %s", id, ctx.Err(), want)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestMetricsAfterWorkload runs a scripted workload and checks that the
// counters of both /metrics pages match it exactly.
func TestMetricsAfterWorkload(t *testing.T) {
	t.Parallel()
	e, ctx := newOpsEnv(t), within(t)
	gets := 0
	for range 3 {
		e.getUntil(t, ctx, createTask(t, ctx, e.c, opsQuick, nil).TaskID, proto.StatusCompleted, &gets)
	}
	e.getUntil(t, ctx, createTask(t, ctx, e.c, opsFail, nil).TaskID, proto.StatusFailed, &gets)
	hold := createTask(t, ctx, e.c, opsHold, nil).TaskID
	for g := e.getUntil(t, ctx, hold, proto.StatusWorking, &gets); g.StatusMessage != "holding"; {
		g = e.getUntil(t, ctx, hold, proto.StatusWorking, &gets)
	}
	if _, err := e.c.CancelTask(ctx, hold); err != nil {
		t.Fatalf("tasks/cancel: %v", err)
	}
	e.getUntil(t, ctx, hold, proto.StatusCancelled, &gets)
	ask := createTask(t, ctx, e.c, opsAsk, nil).TaskID
	e.getUntil(t, ctx, ask, proto.StatusInputRequired, &gets)
	if _, err := e.c.UpdateTask(ctx, ask, map[string]any{"q": accept(map[string]any{"name": "Ada"})}); err != nil {
		t.Fatalf("tasks/update: %v", err)
	}
	e.getUntil(t, ctx, ask, proto.StatusCompleted, &gets)
	for range 2 { // unknown ids: -32602
		var rpc *client.RPCError
		if _, err := e.c.GetTask(ctx, "no-such-task"); !errors.As(err, &rpc) {
			t.Fatalf("tasks/get of an unknown id: %v", err)
		}
	}
	if err := e.c.Call(ctx, "no/such/method", "", nil, nil); err == nil {
		t.Fatal("an unknown method succeeded")
	}

	// A task's terminal state is visible before its run has counted it:
	// scrape until the worker counted all six, then compare everything.
	var ws map[string]float64
	for {
		ws = samples(scrape(t, e.workerURL))
		if ws[`mcpq_task_duration_seconds{tool="ops_quick"}#count`]+ws[`mcpq_task_duration_seconds{tool="ops_fail"}#count`]+
			ws[`mcpq_task_duration_seconds{tool="ops_hold"}#count`]+ws[`mcpq_task_duration_seconds{tool="ops_ask"}#count`] == 6 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("worker never counted 6 ended tasks: %v", ws)
		case <-time.After(5 * time.Millisecond):
		}
	}
	fs := samples(scrape(t, e.feURL))
	for key, want := range map[string]float64{
		`mcpq_tasks_created_total{tool="ops_quick"}`:                        3,
		`mcpq_tasks_created_total{tool="ops_fail"}`:                         1,
		`mcpq_tasks_created_total{tool="ops_hold"}`:                         1,
		`mcpq_tasks_created_total{tool="ops_ask"}`:                          1,
		`mcpq_frontend_requests_total{method="tools/call",outcome="ok"}`:    6,
		`mcpq_frontend_requests_total{method="tasks/get",outcome="ok"}`:     float64(gets),
		`mcpq_frontend_requests_total{method="tasks/get",outcome="error"}`:  2,
		`mcpq_frontend_requests_total{method="tasks/cancel",outcome="ok"}`:  1,
		`mcpq_frontend_requests_total{method="tasks/update",outcome="ok"}`:  1,
		`mcpq_frontend_requests_total{method="other",outcome="rejected"}`:   1, // HTTP 404
		`mcpq_frontend_request_duration_seconds{method="tools/call"}#count`: 6,
		`mcpq_frontend_request_duration_seconds{method="tasks/get"}#count`:  float64(gets + 2),
		`mcpq_tasks_ended_total{status="completed",tool="ops_quick"}`:       3,
		`mcpq_tasks_ended_total{status="failed",tool="ops_fail"}`:           1,
		`mcpq_tasks_ended_total{status="cancelled",tool="ops_hold"}`:        1,
		`mcpq_tasks_ended_total{status="completed",tool="ops_ask"}`:         1,
		`mcpq_task_input_waits_total{tool="ops_ask"}`:                       1,
		`mcpq_task_pickup_seconds#count`:                                    6,
		`mcpq_task_cancel_seconds#count`:                                    1,
		`mcpq_worker_running_jobs`:                                          0,
		`mcpq_worker_takeovers_total{action="rerun"}`:                       0,
		`mcpq_queue_jobs{queue="mcpq",state="pending"}`:                     0,
		`mcpq_queue_oldest_pending_seconds{queue="mcpq"}`:                   0,
	} {
		got, ok := fs[key]
		if !ok {
			got, ok = ws[key]
		}
		if !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, want)
		}
	}
	// A step's check heartbeats (3 quick, 1 hold), and so does the watch that
	// finds the hold's cancel; ops_ask takes no step.
	if ws["mcpq_worker_heartbeats_total"] < 5 {
		t.Errorf("mcpq_worker_heartbeats_total = %v, want at least 5", ws["mcpq_worker_heartbeats_total"])
	}
	for key := range fs {
		if strings.Contains(key, "no-such-task") || strings.Contains(key, "anonymous") {
			t.Errorf("a task id or principal became a label: %s", key)
		}
	}
	if code := httpStatus(t, e.workerURL+"/readyz"); code != http.StatusOK {
		t.Errorf("worker /readyz while running: %d", code)
	}
	if code := httpStatus(t, e.feURL+"/readyz"); code != http.StatusOK {
		t.Errorf("front end /readyz: %d", code)
	}
	e.checkSeries(t, ctx)
}

// checkSeries: the operator view's numbers over time (taskstate/series)
// count TestMetricsAfterWorkload's workload as its metrics do, once the
// front end's and the worker's flushes (each second) have run.
func (e *opsEnv) checkSeries(t *testing.T, ctx context.Context) {
	t.Helper()
	want := map[string]int64{"created": 6, "completed": 4, "failed": 1, "cancelled": 1,
		"claimed": 7, "cancelRequests": 1, "takeovers": 0, "refusals": 0} // claimed: 6 tasks + 1 resume after input
	var got map[string]int64
	for {
		v, err := series.Read(ctx, e.redis.Client, e.redis.Prefix, time.Now(), 5) // the workload may span a minute's end
		if err != nil {
			t.Fatal(err)
		}
		got = map[string]int64{}
		for name := range want {
			for _, n := range v.Series[name] {
				got[name] += n
			}
		}
		var quick int64
		for _, n := range v.ByTool[opsQuick]["completed"] {
			quick += n
		}
		if maps.Equal(got, want) && quick == 3 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("series %v (%s completed %d), want %v", got, opsQuick, quick, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// opsPaid is the workload's priced tool: 100 units a call. It meters
// "use" units, then fails ("fail"), waits for a cancel ("hold", after the
// status message "holding"), asks for input ("ask") or completes.
const opsPaid = "ops_paid"

func paidTool() worker.Tool {
	return worker.Tool{Name: opsPaid, Policy: worker.PolicyTask, Price: &proto.Price{Base: 100, PerArgument: map[string]int64{"frames": 1000}},
		Handler: func(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
			var in struct {
				Use             int64
				Fail, Hold, Ask bool
			}
			if err := c.Bind(&in); err != nil {
				return nil, err
			}
			if err := c.Meter(ctx, in.Use); err != nil {
				return nil, err
			}
			switch {
			case in.Fail:
				return nil, proto.NewError(proto.CodeInternalError, "broken on purpose")
			case in.Hold:
				if err := c.Progress(ctx, "holding"); err != nil {
					return nil, err
				}
				return nil, c.Step(ctx, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
			case in.Ask:
				return askOnce(ctx, c)
			}
			return worker.TextResult("paid"), nil
		}}
}

// TestBillingMetricsAfterWorkload runs a priced tool's workload and checks
// the billing counters of both /metrics pages against it exactly: the
// front end counts reservations, refusals and the settlement of the task
// its tasks/cancel ended; the worker the settlements of the tasks its runs
// ended.
func TestBillingMetricsAfterWorkload(t *testing.T) {
	t.Parallel()
	e, ctx := newOpsEnv(t, paidTool()), within(t)
	gets := 0
	// Nothing credited yet: refused, nothing reserved.
	res, err := e.c.CallTool(ctx, opsPaid, map[string]any{})
	if err != nil || res.Result == nil || !res.Result.IsError || res.Result.Meta[proto.MetaFunds] == nil {
		t.Fatalf("an uncovered call answered %+v, %v", res, err)
	}
	if _, err := e.store.Accounts().Credit(ctx, frontend.AnonymousPrincipal, 500); err != nil {
		t.Fatal(err)
	}
	// 100 reserved each: completed charges 30 and releases 70; completed
	// with 250 used charges 100 (capped); failed releases 100; cancelled
	// while running charges 20 and releases 80.
	e.getUntil(t, ctx, createTask(t, ctx, e.c, opsPaid, map[string]any{"use": 30}).TaskID, proto.StatusCompleted, &gets)
	e.getUntil(t, ctx, createTask(t, ctx, e.c, opsPaid, map[string]any{"use": 250}).TaskID, proto.StatusCompleted, &gets)
	e.getUntil(t, ctx, createTask(t, ctx, e.c, opsPaid, map[string]any{"use": 40, "fail": true}).TaskID, proto.StatusFailed, &gets)
	hold := createTask(t, ctx, e.c, opsPaid, map[string]any{"use": 20, "hold": true}).TaskID
	for g := e.getUntil(t, ctx, hold, proto.StatusWorking, &gets); g.StatusMessage != "holding"; {
		g = e.getUntil(t, ctx, hold, proto.StatusWorking, &gets)
	}
	if _, err := e.c.CancelTask(ctx, hold); err != nil {
		t.Fatalf("tasks/cancel: %v", err)
	}
	e.getUntil(t, ctx, hold, proto.StatusCancelled, &gets)
	// Parked for input after 5 units: tasks/cancel ends it on the front
	// end, which settles: 5 charged, 95 released.
	ask := createTask(t, ctx, e.c, opsPaid, map[string]any{"use": 5, "ask": true}).TaskID
	e.getUntil(t, ctx, ask, proto.StatusInputRequired, &gets)
	if _, err := e.c.CancelTask(ctx, ask); err != nil {
		t.Fatalf("tasks/cancel: %v", err)
	}
	e.getUntil(t, ctx, ask, proto.StatusCancelled, &gets)
	// 1,100 units with 345 available: refused.
	res, err = e.c.CallTool(ctx, opsPaid, map[string]any{"frames": 1})
	if err != nil || res.Result == nil || !res.Result.IsError || res.Result.Meta[proto.MetaFunds] == nil {
		t.Fatalf("an uncovered call answered %+v, %v", res, err)
	}

	// A task's terminal state is visible before its run has counted it:
	// scrape until the worker counted its four settlements' 400 units.
	var ws map[string]float64
	for {
		ws = samples(scrape(t, e.workerURL))
		if ws[`mcpq_billing_charged_units_total{tool="ops_paid"}`]+ws[`mcpq_billing_released_units_total{tool="ops_paid"}`] >= 400 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("worker never counted 4 settlements: %v", ws)
		case <-time.After(5 * time.Millisecond):
		}
	}
	fs := samples(scrape(t, e.feURL))
	for _, c := range []struct {
		page map[string]float64
		key  string
		want float64
	}{
		{fs, `mcpq_billing_refused_total{tool="ops_paid"}`, 2},
		{fs, `mcpq_billing_reserved_units_total{tool="ops_paid"}`, 500},
		{fs, `mcpq_billing_charged_units_total{tool="ops_paid"}`, 5},
		{fs, `mcpq_billing_released_units_total{tool="ops_paid"}`, 95},
		{fs, `mcpq_tasks_created_total{tool="ops_paid"}`, 5},
		{ws, `mcpq_billing_charged_units_total{tool="ops_paid"}`, 30 + 100 + 0 + 20},
		{ws, `mcpq_billing_released_units_total{tool="ops_paid"}`, 70 + 0 + 100 + 80},
		{ws, `mcpq_billing_capped_total{tool="ops_paid"}`, 1},
		{ws, `mcpq_tasks_ended_total{status="cancelled",tool="ops_paid"}`, 1},
	} {
		if got, ok := c.page[c.key]; !ok || got != c.want {
			t.Errorf("%s = %v (present %v), want %v", c.key, got, ok, c.want)
		}
	}
	// Each figure is counted once, by the process that learns it.
	if _, ok := fs[`mcpq_billing_capped_total{tool="ops_paid"}`]; ok {
		t.Error("the front end counted a capped settlement (none of its settlements was)")
	}
	for _, key := range []string{`mcpq_billing_refused_total{tool="ops_paid"}`, `mcpq_billing_reserved_units_total{tool="ops_paid"}`} {
		if _, ok := ws[key]; ok {
			t.Errorf("the worker counted %s", key)
		}
	}
	// The counters add up to the account: charged 155, 345 left.
	a, err := e.store.Accounts().Get(ctx, frontend.AnonymousPrincipal)
	if err != nil {
		t.Fatal(err)
	}
	if a.Charged != 155 || a.Balance != 345 || a.Reserved != 0 {
		t.Errorf("account %+v, want charged 155, balance 345, nothing reserved", a)
	}
}

// TestTraceFromClient: a client's traceparent header on tools/call makes
// the front end's span, the worker's run span and its step span one
// trace, each a child of the one before.
func TestTraceFromClient(t *testing.T) {
	t.Parallel()
	e, ctx := newOpsEnv(t), within(t)
	const traceID, parentSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, via := range []string{"header", "_meta"} {
		t.Run(via, func(t *testing.T) {
			e.spans.Reset()
			tp := "00-" + traceID + "-" + parentSpan + "-01"
			c := taskClient(e.c.URL)
			if via == "header" {
				c.Header = http.Header{"Traceparent": {tp}}
			} else { // _meta wins over a header naming another trace
				c.Meta = map[string]any{proto.MetaTraceparent: tp}
				c.Header = http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
			}
			id := createTask(t, ctx, c, opsQuick, nil).TaskID
			gets := 0
			e.getUntil(t, ctx, id, proto.StatusCompleted, &gets)
			// The run span ends after the outcome is written: wait for it.
			var byName map[string]tracetest.SpanStub
			for {
				byName = map[string]tracetest.SpanStub{}
				for _, s := range e.spans.GetSpans() {
					if s.SpanContext.TraceID().String() == traceID {
						byName[s.Name] = s
					}
				}
				if _, ok := byName["mcpq.run"]; ok {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("no run span in trace %s: %v", traceID, e.spans.GetSpans())
				case <-time.After(5 * time.Millisecond):
				}
			}
			fe, run, step := byName[proto.MethodToolsCall], byName["mcpq.run"], byName["mcpq.step"]
			if !fe.SpanContext.IsValid() || !step.SpanContext.IsValid() {
				t.Fatalf("trace %s has spans %v, want tools/call, mcpq.run and mcpq.step", traceID, keys(byName))
			}
			if got := fe.Parent.SpanID().String(); got != parentSpan || !fe.Parent.IsRemote() {
				t.Errorf("front-end span's parent %s (remote %v), want the client's %s", got, fe.Parent.IsRemote(), parentSpan)
			}
			if run.Parent.SpanID() != fe.SpanContext.SpanID() {
				t.Errorf("run span's parent %s, want the front-end span %s", run.Parent.SpanID(), fe.SpanContext.SpanID())
			}
			if step.Parent.SpanID() != run.SpanContext.SpanID() {
				t.Errorf("step span's parent %s, want the run span %s", step.Parent.SpanID(), run.SpanContext.SpanID())
			}
			found := false
			for _, a := range run.Attributes {
				found = found || (string(a.Key) == "mcpq.task_id" && a.Value.AsString() == id)
			}
			if !found {
				t.Errorf("run span attributes %v lack mcpq.task_id=%s", run.Attributes, id)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
