package legacy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/events"
)

// The era's requests (docs/eras.md, "Which era a request is in"): an
// initialize, or any request carrying Mcp-Session-Id, whose params carry
// no modern _meta protocol version (the front end decides: frontend/era.go).
// A request of a session is served by the same methods as a modern one,
// with the _meta rebuilt from its session, which lives in Redis (Session)
// so any front end serves it.

// headerProtocolVersion is the transport's protocol version header.
const headerProtocolVersion = "MCP-Protocol-Version"

// modernMethods are the methods a session may call besides the era's own
// (handshake, tasks utility, subscriptions), each served by the modern
// method of the same name.
var modernMethods = []string{
	proto.MethodToolsList, proto.MethodToolsCall,
	proto.MethodPromptsList, proto.MethodPromptsGet,
	proto.MethodResourcesList, proto.MethodResourcesTemplates, proto.MethodResourcesRead,
	proto.MethodComplete,
}

// Config configures an Era. Every field is required.
type Config struct {
	// Host is the front end the era runs on.
	Host Host
	// Tasks is the task store; Hub its pub/sub.
	Tasks *taskstate.Store
	Hub   *events.Hub
	// Sessions is the era's own store.
	Sessions *Store
	// SessionIdle is how long a session lives without a request.
	SessionIdle time.Duration
	// SyncWaitLimit bounds how long a call, a tasks/result or a resumed
	// stream is held open.
	SyncWaitLimit time.Duration
	// KeepAlive is how often an open stream writes an SSE comment.
	KeepAlive time.Duration
	// ServerInfo names the server in initialize's answer; ResultMeta is
	// the _meta every result carries.
	ServerInfo proto.Implementation
	ResultMeta proto.ResultMeta
	// Logger receives the era's logs.
	Logger *slog.Logger
}

// Era serves the 2025-11-25 era for a front end. It is safe for
// concurrent use.
type Era struct {
	cfg   Config
	host  Host
	tasks *taskstate.Store
	store *Store
	log   *slog.Logger
	// getStreamHold is how long a GET stream keeps the session's messages
	// without renewing its hold (it renews at each keep-alive): a front
	// end that vanished hands them to another open stream after this.
	getStreamHold time.Duration
}

// New returns an Era.
func New(cfg Config) *Era {
	return &Era{cfg: cfg, host: cfg.Host, tasks: cfg.Tasks, store: cfg.Sessions, log: cfg.Logger,
		getStreamHold: 2 * cfg.KeepAlive}
}

// errNoSession answers a request naming a session that does not exist for
// its principal: 404, after which a 2025-11-25 client starts a new session.
func (e *Era) errNoSession() error {
	return e.host.WithStatus(proto.NewError(proto.CodeInvalidRequest, "Session not found: initialize a new session"), http.StatusNotFound)
}

// Serve serves a POST request of the era.
func (e *Era) Serve(ctx context.Context, req Request) (any, error) {
	c := &Call{era: e, req: req}
	req.Attach(c)
	if req.RPC().Method == proto.MethodInitialize {
		return e.initialize(ctx, c)
	}
	sess, err := e.store.Session(ctx, taskstate.OwnerTag(req.Principal()), req.HTTP().Header.Get(HeaderSessionID), e.cfg.SessionIdle)
	if errors.Is(err, ErrNoSession) {
		return nil, e.errNoSession()
	} else if err != nil {
		return nil, err
	}
	if v := req.HTTP().Header.Get(headerProtocolVersion); v != "" && v != sess.Version {
		return nil, e.host.WithStatus(proto.NewError(proto.CodeInvalidRequest,
			"Bad Request: MCP-Protocol-Version %q is not the session's %q", v, sess.Version), http.StatusBadRequest)
	}
	c.session = sess
	p, err := c.useSession()
	if err != nil {
		return nil, err
	}
	return c.serve(ctx, p)
}

// serve runs the request's method for its session.
func (c *Call) serve(ctx context.Context, p Params) (any, error) {
	e, method := c.era, c.req.RPC().Method
	switch method {
	case MethodPing:
		return result{}, nil
	case MethodSetLevel:
		var lp SetLevelParams
		if err := c.decodeParams(&lp); err != nil {
			return nil, err
		}
		if lp.Level.Severity() < 0 {
			return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: unknown logging level %q", lp.Level)
		}
		if err := e.store.SetSessionLogLevel(ctx, c.session.Owner, c.session.ID, string(lp.Level), e.cfg.SessionIdle); err != nil {
			return nil, err
		}
		return result{}, nil
	case proto.MethodToolsList:
		return e.listTools(ctx)
	case proto.MethodToolsCall:
		return c.callTool(ctx)
	case proto.MethodTasksGet:
		return c.getTask(ctx, p.TaskID)
	case proto.MethodTasksCncl:
		return c.cancelTask(ctx, p.TaskID)
	case proto.MethodTasksList:
		return c.listTasks(ctx)
	case proto.MethodTasksRes:
		return c.taskResult(ctx, p.TaskID)
	case MethodResSubscribe, MethodResUnsubscribe:
		return c.subscribe(ctx, method == MethodResSubscribe)
	}
	if !slices.Contains(modernMethods, method) {
		return nil, proto.NewError(proto.CodeMethodNotFound, "Method not found: %s", method)
	}
	return e.host.Serve(ctx, c.req)
}

// result is an empty result (ping, logging/setLevel).
type result struct{}

// decodeParams decodes the request's params into v; its error is -32602.
func (c *Call) decodeParams(v any) error {
	if err := json.Unmarshal(c.req.RPC().Params, v); err != nil {
		return proto.NewError(proto.CodeInvalidParams, "Invalid params: %v", err)
	}
	return nil
}

// useSession rebuilds the request's _meta from its session: the session's
// version, capabilities and log level, and the request's own progressToken.
func (c *Call) useSession() (Params, error) {
	p, err := c.req.Route()
	if err != nil {
		return p, err
	}
	var lc ClientCapabilities
	_ = json.Unmarshal(c.session.Capabilities, &lc) // checked at initialize
	c.meta = &proto.RequestMeta{
		ProtocolVersion:    c.session.Version,
		ClientCapabilities: &proto.ClientCapabilities{Roots: lc.Roots, Sampling: lc.Sampling, Elicitation: lc.Elicitation},
		LogLevel:           c.session.LogLevel,
		ProgressToken:      p.ProgressToken,
	}
	c.req.Use(c.meta)
	return p, nil
}

// initialize opens a session: the session is written to Redis before its
// id is handed out, so the client's next request may reach any front end.
func (e *Era) initialize(ctx context.Context, c *Call) (any, error) {
	var p proto.InitializeParams
	if err := c.decodeParams(&p); err != nil {
		return nil, err
	}
	if p.ProtocolVersion == "" {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: protocolVersion is required")
	}
	if len(p.Capabilities) == 0 || p.Capabilities[0] != '{' {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: capabilities must be an object")
	}
	var lc ClientCapabilities
	if err := json.Unmarshal(p.Capabilities, &lc); err != nil {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: capabilities: %v", err)
	}
	client, _ := json.Marshal(p.ClientInfo)
	sess := Session{ID: taskstate.NewID(), Owner: taskstate.OwnerTag(c.req.Principal()),
		Version: proto.LegacyVersion, Capabilities: p.Capabilities, ClientInfo: client}
	if err := e.store.CreateSession(ctx, sess, e.cfg.SessionIdle); err != nil {
		return nil, err
	}
	c.req.Header().Set(HeaderSessionID, sess.ID)
	// The server answers with the one revision of the era it speaks; a
	// client that cannot speak it ends the session (2025-11-25 lifecycle).
	return &InitializeResult{
		ProtocolVersion: proto.LegacyVersion,
		Capabilities: Capabilities{
			Tools:       &proto.ListChangedCapability{ListChanged: true},
			Prompts:     &proto.ListChangedCapability{ListChanged: true},
			Resources:   &proto.ResourcesCapability{Subscribe: true, ListChanged: true},
			Completions: &struct{}{},
			Logging:     &struct{}{},
			Tasks: &TasksCapability{List: &struct{}{}, Cancel: &struct{}{},
				Requests: &TaskRequests{Tools: map[string]struct{}{"call": {}}}},
		},
		ServerInfo:   e.cfg.ServerInfo,
		Instructions: "Long-running tools may take minutes; progress arrives as notifications/progress when the call carries a progressToken.",
	}, nil
}

// admitSession opens GET and DELETE /mcp: the caller's principal and the
// Mcp-Session-Id they name, or false once answered: the modern
// transport's 405 without a session header, the admission error otherwise.
func (e *Era) admitSession(w http.ResponseWriter, r *http.Request) (principal, id string, ok bool) {
	id = r.Header.Get(HeaderSessionID)
	if id == "" {
		e.host.NotAllowed(w, r)
		return "", "", false
	}
	principal, err := e.host.Admit(w, r)
	if err != nil {
		e.host.WriteError(w, err)
		return "", "", false
	}
	return principal, id, true
}

// ServeDelete ends a session (DELETE /mcp with Mcp-Session-Id): 204, or
// 404 when the caller has no such session. Without the header it is the
// modern transport's 405.
func (e *Era) ServeDelete(w http.ResponseWriter, r *http.Request) {
	principal, id, ok := e.admitSession(w, r)
	if !ok {
		return
	}
	err := e.store.DeleteSession(r.Context(), taskstate.OwnerTag(principal), id)
	if errors.Is(err, ErrNoSession) {
		e.host.WriteError(w, e.errNoSession())
		return
	} else if err != nil {
		e.host.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
