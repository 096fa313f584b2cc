package frontend_test

// Micro-benchmarks of the request path through the real router
// (Server.Handler, httptest): parse, _meta and header checks, dispatch,
// the store call and the response encoding. On miniredis and, when
// MCPQ_TEST_REDIS_URL is set, on that redis-server. Run:
//
//	go test -run xxx -bench . ./frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

const benchMetaTasks = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"},` +
	`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// benchEnqueuer accepts every job and does nothing (isolates the front end
// from the queue).
type benchEnqueuer struct{}

func (benchEnqueuer) Enqueue(context.Context, frontend.Job) error { return nil }

// benchServer is a front end on one backend with a task-policy tool
// "noop" in its catalog and one live task.
type benchServer struct {
	h    http.Handler
	task string
}

// benchEachBackend runs fn on miniredis and, when MCPQ_TEST_REDIS_URL is
// set, on the real server; asynq chooses the real asynq enqueuer.
func benchEachBackend(b *testing.B, asynqEnqueue bool, fn func(b *testing.B, s *benchServer)) {
	benchBackends(b, asynqEnqueue, false, fn)
}

// benchBackends is benchEachBackend, with billing on and "noop" priced at
// one unit (the caller credited for every run) when billing is set.
func benchBackends(b *testing.B, asynqEnqueue, billing bool, fn func(b *testing.B, s *benchServer)) {
	run := func(b *testing.B, be *redistest.Backend) {
		cfg := frontend.Config{Redis: be.Client, Prefix: be.Prefix, MaxLiveTasks: -1, Billing: billing,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if !asynqEnqueue {
			cfg.Enqueuer = benchEnqueuer{}
		}
		srv, err := frontend.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = srv.Close() })
		store := taskstate.New(be.Client, taskstate.Options{Prefix: be.Prefix})
		ctx := context.Background()
		def := catalog.Entry{Tool: proto.Tool{Name: "noop", InputSchema: json.RawMessage(`{"type":"object"}`)},
			Policy: proto.PolicyTask, Queue: "mcpq"}
		if billing {
			def.Price = &proto.Price{Base: 1}
			if _, err := store.Accounts().Credit(ctx, frontend.AnonymousPrincipal, proto.MaxAmount); err != nil {
				b.Fatal(err)
			}
		}
		if err := publishServed(store, def); err != nil {
			b.Fatal(err)
		}
		ttl := time.Hour.Milliseconds()
		rec, err := store.Create(ctx, taskstate.CreateParams{Principal: frontend.AnonymousPrincipal, Tool: "noop",
			Arguments: json.RawMessage(`{}`), TTLMs: &ttl, PollIntervalMs: 1000, StatusMessage: "Queued"})
		if err != nil {
			b.Fatal(err)
		}
		fn(b, &benchServer{h: srv.Handler(), task: rec.Ref.ID})
	}
	b.Run("miniredis", func(b *testing.B) { run(b, redistest.Mini(b)) })
	if os.Getenv("MCPQ_TEST_REDIS_URL") != "" {
		b.Run("redis-server", func(b *testing.B) { run(b, redistest.Real(b)) })
	}
}

// serve runs one request through the router and checks the answer.
func (s *benchServer) serve(b *testing.B, method, name string, body []byte, want string) {
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", "2026-07-28")
	r.Header.Set("Mcp-Method", method)
	r.Header.Set("Mcp-Name", name)
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, r)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), want) {
		b.Fatalf("HTTP %d %s, want %q", w.Code, w.Body, want)
	}
}

func benchTaskBody(method, id string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"_meta":` + benchMetaTasks + `,"taskId":"` + id + `"}}`)
}

// BenchmarkServeTasksGet: tasks/get of a live task (one HGETALL).
func BenchmarkServeTasksGet(b *testing.B) {
	benchEachBackend(b, false, func(b *testing.B, s *benchServer) {
		body := benchTaskBody("tasks/get", s.task)
		b.ReportAllocs()
		for b.Loop() {
			s.serve(b, "tasks/get", s.task, body, `"status":"working"`)
		}
	})
}

// BenchmarkServeDispatchOnly: tasks/get of a malformed id, answered
// -32602 before any Redis call: parse, _meta, headers, dispatch, encode.
func BenchmarkServeDispatchOnly(b *testing.B) {
	benchEachBackend(b, false, func(b *testing.B, s *benchServer) {
		const bad = "not-an-id"
		body := benchTaskBody("tasks/get", bad)
		b.ReportAllocs()
		for b.Loop() {
			s.serve(b, "tasks/get", bad, body, `-32602`)
		}
	})
}

// BenchmarkServeCreate: tools/call of a task-policy tool → CreateTaskResult,
// with a no-op enqueuer ("fake") and with asynq on the same Redis, free
// and priced with billing on (the reservation in create.lua).
func BenchmarkServeCreate(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":` + benchMetaTasks +
		`,"name":"noop","arguments":{}}}`)
	for _, mode := range []string{"fake-enqueue", "asynq", "asynq-billing"} {
		b.Run(mode, func(b *testing.B) {
			benchBackends(b, mode != "fake-enqueue", mode == "asynq-billing", func(b *testing.B, s *benchServer) {
				b.ReportAllocs()
				for b.Loop() {
					s.serve(b, "tools/call", "noop", body, `"resultType":"task"`)
				}
			})
		})
	}
}
