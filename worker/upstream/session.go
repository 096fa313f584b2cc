package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mcpq/mcpq/proto"
)

type (
	noteFunc    func(method string, params json.RawMessage)
	requestFunc func(method string, params json.RawMessage) (any, *proto.Error)
)

// transport carries a session's messages (a process's stdio, or HTTP).
type transport interface {
	call(ctx context.Context, method string, params any, id *json.RawMessage) (json.RawMessage, error)
	notify(method string, params any) error
	done() <-chan struct{}
	cause() error
	close()
	handle(noteFunc, requestFunc)
}

// clientInfo is who mcpq says it is upstream.
var clientInfo = proto.Implementation{Name: "mcpq", Version: "1"}

// session is one conversation with an upstream: a process, or an HTTP
// session, in the era the handshake settled.
type session struct {
	t       transport
	version string // the negotiated protocol version
	// changed receives a value when the upstream says its tool list changed.
	changed chan struct{}

	mu       sync.Mutex
	progress map[string]func(proto.ProgressParams) // by progressToken
	asked    requestFunc                           // the running call's relay (nil: none runs)
	logged   func(json.RawMessage)                 // the running call's log relay (nil: none runs)
}

// open settles the era on t: initialize unless the spec forces the
// stateless version; a server that refuses initialize as unknown, or with
// a supported list holding the stateless version, is spoken to statelessly.
func open(ctx context.Context, t transport, forced string, changed chan struct{}) (*session, error) {
	s := &session{t: t, changed: changed, progress: map[string]func(proto.ProgressParams){}}
	t.handle(s.note, s.serverRequest)
	defer func() {
		if v, ok := t.(interface{ setVersion(string) }); ok && s.version != "" {
			v.setVersion(s.version)
		}
	}()
	if forced == VersionStateless {
		s.version = VersionStateless
		return s, nil
	}
	res, err := t.call(ctx, "initialize", map[string]any{"protocolVersion": VersionLegacy,
		"capabilities": clientCapabilities, "clientInfo": clientInfo}, nil)
	var perr *proto.Error
	switch {
	case errors.As(err, &perr) && forced == "" && stateless(perr):
		s.version = VersionStateless
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("initialize: %w", err)
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(res, &init); err != nil || init.ProtocolVersion == "" {
		return nil, fmt.Errorf("initialize: the answer has no protocolVersion: %s", clip(res, 200))
	}
	s.version = init.ProtocolVersion
	if err := t.notify("notifications/initialized", map[string]any{}); err != nil {
		return nil, err
	}
	return s, nil
}

// stateless reports whether an error to initialize says the server speaks
// the stateless version.
func stateless(e *proto.Error) bool {
	if e.Code == proto.CodeMethodNotFound {
		return true
	}
	b, _ := json.Marshal(e.Data)
	var d proto.UnsupportedVersionData
	return json.Unmarshal(b, &d) == nil && slices.Contains(d.Supported, VersionStateless)
}

// request sends method with params (an object), adding the per-request
// _meta the stateless era needs and meta's keys.
func (s *session) request(ctx context.Context, method string, params map[string]any, meta map[string]any, id *json.RawMessage) (json.RawMessage, error) {
	m := map[string]any{}
	for k, v := range meta {
		m[k] = v
	}
	if s.version == VersionStateless {
		m[proto.MetaProtocolVersion] = VersionStateless
		m[proto.MetaClientInfo] = clientInfo
		m[proto.MetaClientCapabilities] = statelessCapabilities
	}
	if len(m) > 0 {
		params["_meta"] = m
	}
	return s.t.call(ctx, method, params, id)
}

// note routes the upstream's notifications.
func (s *session) note(method string, params json.RawMessage) {
	switch method {
	case proto.NotifyProgress:
		var p proto.ProgressParams
		if json.Unmarshal(params, &p) != nil {
			return
		}
		s.mu.Lock()
		fn := s.progress[string(p.ProgressToken)]
		s.mu.Unlock()
		if fn != nil {
			fn(p)
		}
	case proto.NotifyMessage: // the running call's (one call at a time runs on a session)
		s.mu.Lock()
		fn := s.logged
		s.mu.Unlock()
		if fn != nil {
			fn(params)
		}
	case "notifications/tools/list_changed":
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
}

// serverRequest answers a request the upstream sent: the running call's
// relay has it (one call at a time runs on a session).
func (s *session) serverRequest(method string, params json.RawMessage) (any, *proto.Error) {
	s.mu.Lock()
	fn := s.asked
	s.mu.Unlock()
	if fn == nil {
		return nil, proto.NewError(proto.CodeMethodNotFound, "Method not found: %s (no call is running)", method)
	}
	return fn(method, params)
}

// onRequest routes the upstream's requests to fn until the returned func runs.
func (s *session) onRequest(fn requestFunc) func() {
	s.mu.Lock()
	s.asked = fn
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.asked = nil
		s.mu.Unlock()
	}
}

// onLog routes the upstream's log messages to fn until the returned func runs.
func (s *session) onLog(fn func(json.RawMessage)) func() {
	s.mu.Lock()
	s.logged = fn
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.logged = nil
		s.mu.Unlock()
	}
}

// onProgress routes progress of token to fn until the returned func runs.
func (s *session) onProgress(token string, fn func(proto.ProgressParams)) func() {
	key, _ := json.Marshal(token)
	s.mu.Lock()
	s.progress[string(key)] = fn
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.progress, string(key))
		s.mu.Unlock()
	}
}

// listTools lists every tool, following nextCursor.
func (s *session) listTools(ctx context.Context) ([]json.RawMessage, error) {
	var all []json.RawMessage
	cursor := ""
	for page := 0; ; page++ {
		if page == 1000 {
			return nil, errors.New("tools/list: over 1000 pages")
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := s.request(ctx, proto.MethodToolsList, params, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		var r struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		all = append(all, r.Tools...)
		if r.NextCursor == "" || r.NextCursor == cursor {
			return all, nil
		}
		cursor = r.NextCursor
	}
}
