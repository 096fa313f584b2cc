package frontend

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// Server is a stateless MCP front end.
type Server struct {
	cfg        Config
	store      *taskstate.Store
	hub        *taskstate.Hub
	catalog    *catalog
	log        *slog.Logger
	resultMeta proto.ResultMeta
	methods    map[string]method
}

// method serves one JSON-RPC method.
type method func(ctx context.Context, c *call) (any, error)

// call is one JSON-RPC request in flight.
type call struct {
	req       *proto.Request
	httpReq   *http.Request
	principal string
	meta      *proto.RequestMeta
}

// tasksDeclared reports whether the request declared the Tasks extension.
func (c *call) tasksDeclared() bool {
	return c.meta.ClientCapabilities.HasExtension(proto.TasksExtension)
}

// New returns a Server. Close releases its pub/sub connection.
func New(cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	store := taskstate.New(cfg.Redis, taskstate.Options{Prefix: cfg.Prefix, Clock: cfg.Clock})
	s := &Server{
		cfg:        cfg,
		store:      store,
		hub:        taskstate.NewHub(cfg.Redis),
		catalog:    newCatalog(store, cfg.CatalogTTL),
		log:        cfg.Logger,
		resultMeta: proto.ResultMeta{proto.MetaServerInfo: cfg.ServerInfo},
	}
	s.methods = map[string]method{
		proto.MethodDiscover:  s.discover,
		proto.MethodToolsList: s.listTools,
		proto.MethodToolsCall: s.callTool,
		proto.MethodTasksGet:  s.getTask,
		proto.MethodTasksCncl: s.cancelTask,
	}
	return s, nil
}

// Close releases the server's pub/sub connection. Stop the HTTP server first.
func (s *Server) Close() error { return s.hub.Close() }

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Redis.Ping(r.Context()).Err(); err != nil {
		http.Error(w, "redis: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}

// decodeParams decodes the request's params into v; its error is -32602.
func decodeParams(c *call, v any) error {
	if err := json.Unmarshal(c.req.Params, v); err != nil {
		return proto.NewError(proto.CodeInvalidParams, "Invalid params: %v", err)
	}
	return nil
}
