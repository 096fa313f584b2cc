package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/mcpq/mcpq/frontend/internal/legacy"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/catalog"
	"github.com/mcpq/mcpq/taskstate/events"
)

// The one hook of the 2025-11-25 era (frontend/internal/legacy,
// docs/eras.md): this file plugs it into the Server (hook.go's eraServer
// and callHook) and runs it on the modern server (the era's Host and
// Request). No other file of this package names the era's package but the
// era's tests (legacy_test.go, resume_test.go). Dropping the era means
// deleting frontend/internal/legacy, this file, those tests and the line of
// New that calls plugLegacy.

// legacyEra is the 2025-11-25 era plugged into a Server.
type legacyEra struct {
	s   *Server
	era *legacy.Era
}

// plugLegacy returns s's 2025-11-25 era, or nil when s does not serve it.
func (s *Server) plugLegacy() eraServer {
	if !slices.Contains(s.versions, proto.LegacyVersion) {
		return nil
	}
	h := &legacyEra{s: s}
	h.era = legacy.New(legacy.Config{Host: h, Tasks: s.store, Hub: s.hub,
		Sessions:    legacy.NewStore(s.cfg.Redis, s.store.Keys().Prefix, s.cfg.Clock),
		SessionIdle: s.cfg.SessionIdle, SyncWaitLimit: s.cfg.SyncWaitLimit, KeepAlive: keepAliveEvery,
		ServerInfo: s.cfg.ServerInfo, ResultMeta: s.resultMeta, Logger: s.log})
	return h
}

// claims: an initialize, or a request with Mcp-Session-Id, without modern
// _meta (docs/eras.md, "Which era a request is in").
func (h *legacyEra) claims(c *call) bool {
	return (c.req.Method == proto.MethodInitialize || c.httpReq.Header.Get(legacy.HeaderSessionID) != "") &&
		!modernVersion(c.req.Params)
}

func (h *legacyEra) serve(c *call) (any, error) {
	res, err := h.era.Serve(c.httpReq.Context(), &legacyRequest{s: h.s, c: c})
	if err != nil {
		return nil, err
	}
	return legacyShape(res), nil
}

// modernOnly are the result fields of 2026-07-28 that 2025-11-25 does not
// have: the result discriminator and the cache hints.
var modernOnly = []string{"resultType", "cacheScope", "ttlMs"}

// legacyShape is a result as a 2025-11-25 client reads it: without the
// fields only 2026-07-28 has (modernOnly) at its top level. A task's
// lifetime is ttl in that revision's shape (legacy.Task), never ttlMs.
func legacyShape(res any) any {
	if res == nil {
		return res
	}
	b, err := json.Marshal(res)
	if err != nil {
		return res // the encoder reports it as it would have
	}
	var m rawResult
	if json.Unmarshal(b, &m) != nil || m == nil {
		return res
	}
	for _, k := range modernOnly {
		delete(m, k)
	}
	return m
}

// response: a body of a session that is a JSON-RPC response (an answer to
// an input request the era sent).
func (h *legacyEra) response(w http.ResponseWriter, r *http.Request, principal string, body []byte) bool {
	if r.Header.Get(legacy.HeaderSessionID) == "" || jsonDepth(body) > h.s.cfg.MaxDepth {
		return false
	}
	var resp legacy.ClientResponse
	if decodeEnvelope(body, &resp) != nil || !resp.IsResponse() {
		return false
	}
	h.era.ServeResponse(w, r, principal, &resp)
	return true
}

func (h *legacyEra) serveGet(w http.ResponseWriter, r *http.Request)    { h.era.ServeGet(w, r) }
func (h *legacyEra) serveDelete(w http.ResponseWriter, r *http.Request) { h.era.ServeDelete(w, r) }

// The era's Host (legacy.Host documents each method).

func (h *legacyEra) Admit(w http.ResponseWriter, r *http.Request) (string, error) {
	return h.s.admit(w, r)
}
func (h *legacyEra) WriteError(w http.ResponseWriter, err error)       { h.s.writeError(w, nullID, err) }
func (h *legacyEra) WithStatus(e *proto.Error, status int) error       { return withStatus(e, status) }
func (h *legacyEra) NotAllowed(w http.ResponseWriter, r *http.Request) { methodNotAllowed(w, r) }
func (h *legacyEra) Draining() <-chan struct{}                         { return h.s.draining }

func (h *legacyEra) Pinned(err error) bool {
	var se *statusError
	return errors.As(err, &se)
}

func (h *legacyEra) Open(w http.ResponseWriter, r *http.Request, principal string) legacy.Request {
	return &legacyRequest{s: h.s, c: &call{req: &proto.Request{}, httpReq: r, principal: principal, resp: newResponder(w, r)}}
}

func (h *legacyEra) Catalog(ctx context.Context) ([]catalog.Entry, error) {
	return h.s.catalog.list(ctx)
}

func (h *legacyEra) Entry(ctx context.Context, name string) (*catalog.Entry, error) {
	return h.s.catalog.get(ctx, name)
}

func (h *legacyEra) Serve(ctx context.Context, req legacy.Request) (any, error) {
	c := req.(*legacyRequest).c
	m, ok := h.s.methods[c.req.Method]
	if !ok {
		return nil, proto.NewError(proto.CodeMethodNotFound, "Method not found: %s", c.req.Method)
	}
	res, err := m(ctx, c)
	if err != nil {
		return nil, err
	}
	return h.s.withMeta(res), nil
}

func (h *legacyEra) Result(rec *taskstate.Record, relatedTask string) (any, error) {
	res, err := finalResult(rec)
	raw, ok := res.(rawResult)
	if !ok || relatedTask == "" {
		return res, err
	}
	raw = h.s.withMeta(raw).(rawResult)
	var meta map[string]any
	_ = json.Unmarshal(raw["_meta"], &meta)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[legacy.MetaRelatedTask] = map[string]string{"taskId": relatedTask}
	raw["_meta"], _ = json.Marshal(meta)
	return raw, nil
}

func (h *legacyEra) Answer(ctx context.Context, ref taskstate.Ref, answers map[string]json.RawMessage) error {
	return h.s.answer(ctx, ref, answers)
}

func (h *legacyEra) AcquireStream(principal string) (func(), error) {
	return h.s.listens.acquire(principal, h.s.cfg.MaxListenStreams)
}

// legacyRequest is a call as the era sees it (legacy.Request documents
// each method).
type legacyRequest struct {
	s *Server
	c *call
}

func (r *legacyRequest) RPC() *proto.Request         { return r.c.req }
func (r *legacyRequest) HTTP() *http.Request         { return r.c.httpReq }
func (r *legacyRequest) Principal() string           { return r.c.principal }
func (r *legacyRequest) Attach(lc *legacy.Call)      { r.c.hook = lc }
func (r *legacyRequest) Use(meta *proto.RequestMeta) { r.c.meta = meta }
func (r *legacyRequest) Rebind(rpc *proto.Request)   { r.c.req = rpc }
func (r *legacyRequest) Header() http.Header         { return r.c.resp.w.Header() }
func (r *legacyRequest) AcceptsSSE() bool            { return r.c.resp.sseOK }
func (r *legacyRequest) Notify(msg any) bool         { return r.c.resp.notify(msg) }
func (r *legacyRequest) KeepAlive()                  { r.c.resp.keepAlive() }
func (r *legacyRequest) TaskNow(ttl *int64)          { r.c.taskNow, r.c.ttl = true, ttl }
func (r *legacyRequest) Observe()                    { r.c.observer = true }
func (r *legacyRequest) Shown(version int64)         { r.c.seen = max(r.c.seen, version) }
func (r *legacyRequest) RestoreProgress(p float64)   { r.c.progress, r.c.progressSent = p, true }
func (r *legacyRequest) WatchAuth(ctx context.Context) (context.Context, func()) {
	return r.s.watchAuth(ctx, r.c)
}

// Route decodes params as the modern methods read them (call.names) and
// the progressToken of their _meta.
func (r *legacyRequest) Route() (legacy.Params, error) {
	var p routing
	if params := r.c.req.Params; len(params) > 0 && string(params) != "null" {
		if err := decodeJSON(params, &p); err != nil {
			return legacy.Params{}, proto.NewError(proto.CodeInvalidParams, "Invalid params: %v", err)
		}
	}
	var own struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	}
	if len(p.Meta) > 0 && string(p.Meta) != "null" {
		if err := decodeJSON(p.Meta, &own); err != nil {
			return legacy.Params{}, proto.NewError(proto.CodeInvalidParams, "Invalid params: _meta: %v", err)
		}
	}
	r.c.names = &p
	return legacy.Params{ProgressToken: own.ProgressToken, TaskID: str(p.TaskID)}, nil
}

func (r *legacyRequest) Log(l *legacy.EventLog) {
	r.c.resp.mu.Lock()
	defer r.c.resp.mu.Unlock()
	r.c.resp.log = l
}

func (r *legacyRequest) Resend(id string, data []byte) {
	resp := r.c.resp
	resp.mu.Lock()
	defer resp.mu.Unlock()
	_, _ = resp.w.Write([]byte("id: " + id + "\nevent: message\ndata: "))
	_, _ = resp.w.Write(data)
	_, _ = resp.w.Write([]byte("\n\n"))
	resp.flush()
}

func (r *legacyRequest) Finish(id json.RawMessage, res any, err error) {
	out := proto.Response{JSONRPC: proto.JSONRPCVersion, ID: id}
	if err != nil {
		out.Error, _ = toRPC(err)
	} else {
		out.Result = legacyShape(r.s.withMeta(res))
	}
	r.c.resp.finish(http.StatusOK, r.s.encode(out))
}

func (r *legacyRequest) NextProgress() float64 {
	if r.c.progressSent {
		r.c.progress++
	}
	r.c.progressSent = true
	return r.c.progress
}

func (r *legacyRequest) Await(ctx context.Context, sub *events.Subscription, ref taskstate.Ref, d time.Duration,
	resultOnly bool) (*taskstate.Record, error) {
	return r.s.awaitSettled(ctx, r.c, sub, ref, d, resultOnly)
}
