package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpq/mcpq/frontend/internal/legacy"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// The legacy era (protocol revision 2025-11-25, docs/eras.md). A request
// is legacy when it is an initialize or carries Mcp-Session-Id, and its
// params carry no modern _meta protocol version: a request with modern
// per-request _meta is always served statelessly (the 2026-07-28
// versioning text, "Backward Compatibility"). A legacy request is served by
// the same methods as a modern one, with the _meta rebuilt from its session,
// which lives in Redis (legacy.Session) so any front end serves it.

// headerSessionID names a legacy HTTP session.
const headerSessionID = "Mcp-Session-Id"

// legacyMethods are the methods a legacy session may call besides the
// handshake ones (initialize, ping, logging/setLevel), each served by the
// modern method of the same name.
var legacyMethods = []string{
	proto.MethodToolsList, proto.MethodToolsCall,
	proto.MethodPromptsList, proto.MethodPromptsGet,
	proto.MethodResourcesList, proto.MethodResourcesTemplates, proto.MethodResourcesRead,
	proto.MethodComplete,
}

// isLegacy reports whether req selects legacy semantics.
func isLegacy(r *http.Request, req *proto.Request) bool {
	if req.Method != proto.MethodInitialize && r.Header.Get(headerSessionID) == "" {
		return false
	}
	var p struct {
		Meta struct {
			Version *string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	_ = decodeJSON(req.Params, &p) // params that do not decode have no modern _meta
	return p.Meta.Version == nil
}

// legacyOn reports whether the server serves the legacy era.
func (s *Server) legacyOn() bool { return slices.Contains(s.versions, proto.LegacyVersion) }

// modernOn reports whether the server serves the modern era.
func (s *Server) modernOn() bool { return slices.Contains(s.versions, proto.ProtocolVersion) }

// errNoSession answers a request naming a session that does not exist for
// its principal: 404, after which a 2025-11-25 client starts a new session.
func errNoSession() error {
	return withStatus(proto.NewError(proto.CodeInvalidRequest, "Session not found: initialize a new session"), http.StatusNotFound)
}

// dispatchLegacy serves a legacy-era request.
func (s *Server) dispatchLegacy(c *call) (any, error) {
	ctx := c.httpReq.Context()
	if c.req.Method == proto.MethodInitialize {
		return s.initialize(ctx, c)
	}
	sess, err := s.sessions.Session(ctx, taskstate.OwnerTag(c.principal), c.httpReq.Header.Get(headerSessionID), s.cfg.SessionIdle)
	if errors.Is(err, legacy.ErrNoSession) {
		return nil, errNoSession()
	} else if err != nil {
		return nil, err
	}
	if v := c.httpReq.Header.Get(headerProtocolVersion); v != "" && v != sess.Version {
		return nil, withStatus(proto.NewError(proto.CodeInvalidRequest,
			"Bad Request: MCP-Protocol-Version %q is not the session's %q", v, sess.Version), http.StatusBadRequest)
	}
	c.session = sess
	if err := s.legacyMeta(c); err != nil {
		return nil, err
	}
	switch c.req.Method {
	case proto.MethodPing:
		return legacyResult{}, nil
	case proto.MethodSetLevel:
		var p proto.SetLevelParams
		if err := decodeParams(c, &p); err != nil {
			return nil, err
		}
		if p.Level.Severity() < 0 {
			return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: unknown logging level %q", p.Level)
		}
		if err := s.sessions.SetSessionLogLevel(ctx, sess.Owner, sess.ID, string(p.Level), s.cfg.SessionIdle); err != nil {
			return nil, err
		}
		return legacyResult{}, nil
	case proto.MethodToolsList:
		return s.listLegacyTools(ctx, c)
	case proto.MethodToolsCall:
		return s.callLegacyTool(ctx, c)
	case proto.MethodTasksGet:
		return s.legacyGetTask(ctx, c)
	case proto.MethodTasksCncl:
		return s.legacyCancelTask(ctx, c)
	case proto.MethodTasksList:
		return s.legacyListTasks(ctx, c)
	case proto.MethodTasksRes:
		return s.legacyTaskResult(ctx, c)
	case proto.MethodResSubscribe, proto.MethodResUnsubscribe:
		return s.subscribe(ctx, c, c.req.Method == proto.MethodResSubscribe)
	}
	if !slices.Contains(legacyMethods, c.req.Method) {
		return nil, proto.NewError(proto.CodeMethodNotFound, "Method not found: %s", c.req.Method)
	}
	res, err := s.methods[c.req.Method](ctx, c)
	if err != nil {
		return nil, err
	}
	return s.withMeta(res), nil
}

// legacyResult is an empty legacy result (ping, logging/setLevel).
type legacyResult struct{}

// legacyMeta rebuilds the request's _meta from its session: the session's
// version, capabilities and log level, and the request's own progressToken.
func (s *Server) legacyMeta(c *call) error {
	var p routing
	if len(c.req.Params) > 0 && string(c.req.Params) != "null" {
		if err := decodeJSON(c.req.Params, &p); err != nil {
			return proto.NewError(proto.CodeInvalidParams, "Invalid params: %v", err)
		}
	}
	var own struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	}
	if len(p.Meta) > 0 && string(p.Meta) != "null" {
		if err := decodeJSON(p.Meta, &own); err != nil {
			return proto.NewError(proto.CodeInvalidParams, "Invalid params: _meta: %v", err)
		}
	}
	var lc proto.LegacyClientCapabilities
	_ = decodeJSON(c.session.Capabilities, &lc) // checked at initialize
	c.meta = &proto.RequestMeta{
		ProtocolVersion:    c.session.Version,
		ClientCapabilities: &proto.ClientCapabilities{Roots: lc.Roots, Sampling: lc.Sampling, Elicitation: lc.Elicitation},
		LogLevel:           c.session.LogLevel,
		ProgressToken:      own.ProgressToken,
	}
	c.names = &p
	return nil
}

// initialize opens a legacy session: the session is written to Redis
// before its id is handed out, so the client's next request may reach any
// front end.
func (s *Server) initialize(ctx context.Context, c *call) (any, error) {
	var p proto.InitializeParams
	if err := decodeParams(c, &p); err != nil {
		return nil, err
	}
	if p.ProtocolVersion == "" {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: protocolVersion is required")
	}
	if !s.legacyOn() {
		// A modern-only server names the versions it serves (versioning
		// text, "Backward Compatibility").
		return nil, &proto.Error{Code: proto.CodeUnsupportedProtocolVersion,
			Message: "Unsupported protocol version: this server serves " + strings.Join(s.versions, ", ") + " only; initialize is not served",
			Data:    proto.UnsupportedVersionData{Supported: s.versions, Requested: p.ProtocolVersion}}
	}
	if len(p.Capabilities) == 0 || p.Capabilities[0] != '{' {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: capabilities must be an object")
	}
	var lc proto.LegacyClientCapabilities
	if err := decodeJSON(p.Capabilities, &lc); err != nil {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: capabilities: %v", err)
	}
	client, _ := encodeJSON(p.ClientInfo)
	sess := legacy.Session{ID: taskstate.NewID(), Owner: taskstate.OwnerTag(c.principal),
		Version: proto.LegacyVersion, Capabilities: p.Capabilities, ClientInfo: client}
	if err := s.sessions.CreateSession(ctx, sess, s.cfg.SessionIdle); err != nil {
		return nil, err
	}
	c.resp.w.Header().Set(headerSessionID, sess.ID)
	// The server answers with the one legacy revision it speaks; a client
	// that cannot speak it ends the session (2025-11-25 lifecycle).
	return &proto.InitializeResult{
		ProtocolVersion: proto.LegacyVersion,
		Capabilities: proto.LegacyCapabilities{
			Tools:       &proto.ListChangedCapability{ListChanged: true},
			Prompts:     &proto.ListChangedCapability{ListChanged: true},
			Resources:   &proto.ResourcesCapability{Subscribe: true, ListChanged: true},
			Completions: &struct{}{},
			Logging:     &struct{}{},
			Tasks: &proto.LegacyTasksCapability{List: &struct{}{}, Cancel: &struct{}{},
				Requests: &proto.LegacyTaskRequests{Tools: map[string]struct{}{"call": {}}}},
		},
		ServerInfo:   s.cfg.ServerInfo,
		Instructions: "Long-running tools may take minutes; progress arrives as notifications/progress when the call carries a progressToken.",
	}, nil
}

// legacyStatus is the HTTP status of a legacy request's error: the
// 2025-11-25 transport carries JSON-RPC errors in a 200 answer, so only
// statuses that are the transport's own (a missing session, 401, 413,
// 429, 503) stay.
func legacyStatus(err error, status int) int {
	var se *statusError
	if errors.As(err, &se) {
		return status
	}
	if status == http.StatusBadRequest || status == http.StatusNotFound {
		return http.StatusOK
	}
	return status
}

// admitSession opens GET and DELETE /mcp: the caller's principal and the
// Mcp-Session-Id they name, or false once answered: the modern
// transport's 405 without a session header (or with the legacy era off),
// the admission error otherwise.
func (s *Server) admitSession(w http.ResponseWriter, r *http.Request) (principal, id string, ok bool) {
	id = r.Header.Get(headerSessionID)
	if !s.legacyOn() || id == "" {
		methodNotAllowed(w, r)
		return "", "", false
	}
	principal, err := s.admit(w, r)
	if err != nil {
		s.writeError(w, nullID, err)
		return "", "", false
	}
	return principal, id, true
}

// serveDelete ends a legacy session (DELETE /mcp with Mcp-Session-Id):
// 204, or 404 when the caller has no such session. Without the header, or
// when the server serves no legacy era, it is the modern transport's 405.
func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request) {
	principal, id, ok := s.admitSession(w, r)
	if !ok {
		return
	}
	err := s.sessions.DeleteSession(r.Context(), taskstate.OwnerTag(principal), id)
	if errors.Is(err, legacy.ErrNoSession) {
		s.writeError(w, nullID, errNoSession())
		return
	} else if err != nil {
		s.writeError(w, nullID, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
