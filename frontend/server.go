package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// Server is a stateless MCP front end.
type Server struct {
	stateKey   []byte        // HMAC key of MRTR requestState, shared by replicas
	draining   chan struct{} // closed by Drain: listen streams end
	drainOnce  sync.Once
	cfg        Config
	store      *taskstate.Store
	hub        *taskstate.Hub
	catalog    *catalog
	log        *slog.Logger
	resultMeta proto.ResultMeta
	methods    map[string]method
	// captureJobs: the enqueuer is the default asynq client on a
	// taskstate.JobCapture, so a create sends record and job together.
	captureJobs bool
}

// method serves one JSON-RPC method.
type method func(ctx context.Context, c *call) (any, error)

// call is one JSON-RPC request in flight.
type call struct {
	req       *proto.Request
	httpReq   *http.Request
	principal string
	meta      *proto.RequestMeta
	names     *routing // params fields decoded with _meta
	resp      *responder
}

// tasksDeclared reports whether the request declared the Tasks extension.
func (c *call) tasksDeclared() bool {
	return c.meta.ClientCapabilities.HasExtension(proto.TasksExtension)
}

// New returns a Server. Close releases its pub/sub connection.
func New(cfg Config) (*Server, error) {
	captureJobs := cfg.Enqueuer == nil && cfg.Redis != nil
	if captureJobs {
		cfg.Enqueuer = asynq.NewClientFromRedisClient(taskstate.NewJobCapture(cfg.Redis))
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	store := taskstate.New(cfg.Redis, taskstate.Options{Prefix: cfg.Prefix, Clock: cfg.Clock,
		WaitReplicas: cfg.WaitReplicas, WaitTimeout: cfg.WaitTimeout})
	key := cfg.StateKey
	if len(key) == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if key, err = stateKeyFromRedis(ctx, cfg.Redis, store.Keys()); err != nil {
			return nil, fmt.Errorf("frontend: requestState key: %w", err)
		}
	}
	s := &Server{
		stateKey:    key,
		draining:    make(chan struct{}),
		cfg:         cfg,
		store:       store,
		hub:         taskstate.NewHub(cfg.Redis),
		catalog:     newCatalog(store, cfg.CatalogTTL),
		log:         cfg.Logger,
		resultMeta:  proto.ResultMeta{proto.MetaServerInfo: cfg.ServerInfo},
		captureJobs: captureJobs,
	}
	s.methods = map[string]method{
		proto.MethodDiscover:  s.discover,
		proto.MethodToolsList: s.listTools,
		proto.MethodToolsCall: s.callTool,
		proto.MethodTasksGet:  s.getTask,
		proto.MethodTasksCncl: s.cancelTask,
		proto.MethodTasksUpd:  s.updateTask,
		proto.MethodListen:    s.listen,

		proto.MethodPromptsList:        s.listPrompts,
		proto.MethodPromptsGet:         s.getPrompt,
		proto.MethodResourcesList:      s.listResources,
		proto.MethodResourcesTemplates: s.listTemplates,
		proto.MethodResourcesRead:      s.readResource,
		proto.MethodComplete:           s.complete,
	}
	return s, nil
}

// Drain ends every open subscriptions/listen stream with its final result,
// so an HTTP server Shutdown that follows is not held up by them.
func (s *Server) Drain() { s.drainOnce.Do(func() { close(s.draining) }) }

// Close releases the server's pub/sub connection. Drain and stop the HTTP
// server first.
func (s *Server) Close() error {
	s.Drain()
	return s.hub.Close()
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Redis.Ping(r.Context()).Err(); err != nil {
		s.log.Warn("health check: redis unreachable", "err", err)
		http.Error(w, "redis unreachable", http.StatusServiceUnavailable)
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
