package upstream

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// Protocol versions an upstream may speak.
const (
	// VersionLegacy is the newest version that needs initialize.
	VersionLegacy = "2025-11-25"
	// VersionStateless is the stateless version (no initialize; _meta on
	// every request).
	VersionStateless = proto.ProtocolVersion
)

// DefaultConcurrency is Spec.Concurrency's default.
const DefaultConcurrency = 1

// Spec declares one upstream MCP server.
type Spec struct {
	// Name names the server in logs and errors.
	Name string
	// Command is the argv of a stdio server (Command[0] looked up on PATH);
	// Env is added to its environment and Cwd is its working directory.
	Command []string
	Env     map[string]string
	Cwd     string
	// URL is the endpoint of a Streamable HTTP server (instead of Command);
	// Headers go with every request.
	URL     string
	Headers map[string]string
	// ProtocolVersion forces the era ("2025-11-25" or "2026-07-28");
	// empty: initialize is tried and a server that refuses it is spoken
	// to statelessly.
	ProtocolVersion string
	// Queue is the queue the server's tools go to (default worker.DefaultQueue).
	Queue string
	// Tools selects the upstream tools served, by name or path.Match
	// pattern (empty: all of them).
	Tools []string
	// Prefix is put before every upstream tool's name in mcpq's catalog.
	Prefix string
	// Concurrency is how many calls run at once: processes of a stdio
	// server, requests to an HTTP one (default DefaultConcurrency).
	Concurrency int
	// Timeout bounds one call (0: only the task's TTL does). A call that
	// takes longer is cancelled upstream and is a tool error.
	Timeout time.Duration
	// Rerun allows a call whose worker was lost to be run again even when
	// the upstream does not declare the tool idempotentHint or readOnlyHint.
	Rerun bool
	// PrincipalHeader, when set, names an HTTP header that carries the
	// calling principal's name to a url server on every request of a call;
	// PrincipalMeta a _meta key of the tools/call that carries it (any
	// server). The client's credentials are never sent upstream.
	PrincipalHeader string
	PrincipalMeta   string
	// Overrides change single tools, by upstream name.
	Overrides map[string]Override
	// Logger receives the server's stderr and the client's warnings
	// (default slog.Default()).
	Logger *slog.Logger
}

// Override is what a tools file may set for one upstream tool; zero
// fields keep the server's value.
type Override struct {
	Policy       worker.Policy
	TTL          time.Duration
	PollInterval time.Duration
	Timeout      time.Duration
	Price        *proto.Price
	Queue        string
	// Rerun, when set, replaces Spec.Rerun for the tool.
	Rerun *bool
}

// serverName is what a server's name may be (it appears in logs and keys).
var serverName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// check validates s; errors name the field.
func (s *Spec) check() error {
	if !serverName.MatchString(s.Name) {
		return fmt.Errorf("field name: %q is not a server name (1 to 64 of A-Z a-z 0-9 _ . -)", s.Name)
	}
	switch {
	case len(s.Command) == 0 && s.URL == "":
		return errors.New("field command or url: one is needed (a stdio program, or a Streamable HTTP endpoint)")
	case len(s.Command) > 0 && s.URL != "":
		return errors.New("fields command and url: give one, not both")
	case len(s.Command) > 0 && s.Command[0] == "":
		return errors.New("field command: the program is empty")
	case s.URL == "" && len(s.Headers) > 0:
		return errors.New("field headers: only for a url server")
	case s.URL != "" && (s.Cwd != "" || len(s.Env) > 0):
		return errors.New("fields env and cwd: only for a command server")
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("field url: %q is not an http or https URL", s.URL)
		}
	}
	switch s.ProtocolVersion {
	case "", VersionLegacy, VersionStateless:
	default:
		return fmt.Errorf("field protocolVersion: %q is not %s or %s", s.ProtocolVersion, VersionLegacy, VersionStateless)
	}
	if err := s.checkPrincipal(); err != nil {
		return err
	}
	for _, p := range s.Tools {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("field tools: %q is not a name or pattern: %v", p, err)
		}
	}
	switch {
	case s.Concurrency < 0:
		return errors.New("field concurrency: negative")
	case s.Timeout < 0:
		return errors.New("field timeout: negative")
	}
	for name, o := range s.Overrides {
		if err := o.check(); err != nil {
			return fmt.Errorf("field overrides: %s: %w", name, err)
		}
	}
	return nil
}

// headerName is an HTTP header field name (RFC 9110 token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// checkPrincipal validates the principal forwarding fields.
func (s *Spec) checkPrincipal() error {
	h := s.PrincipalHeader
	switch {
	case h != "" && s.URL == "":
		return errors.New("field principalHeader: only for a url server (use principalMeta for a command server)")
	case h != "" && !headerName.MatchString(h):
		return fmt.Errorf("field principalHeader: %q is not an HTTP header name", h)
	case h != "" && (strings.EqualFold(h, "Authorization") || strings.EqualFold(h, "Mcp-Session-Id") ||
		strings.EqualFold(h, "MCP-Protocol-Version") || strings.EqualFold(h, "Content-Type") || strings.EqualFold(h, "Accept")):
		return fmt.Errorf("field principalHeader: %s is a header mcpq or the protocol sets", h)
	case s.PrincipalMeta != "" && (strings.HasPrefix(s.PrincipalMeta, "io.modelcontextprotocol/") || s.PrincipalMeta == proto.MetaProgressToken):
		return fmt.Errorf("field principalMeta: %q is a key the protocol reserves", s.PrincipalMeta)
	}
	for k := range s.Headers {
		if h != "" && strings.EqualFold(k, h) {
			return fmt.Errorf("field principalHeader: %s is also in headers", h)
		}
	}
	return nil
}

func (o *Override) check() error {
	switch o.Policy {
	case "", worker.PolicyAuto, worker.PolicySync, worker.PolicyTask:
	default:
		return fmt.Errorf("field policy: %q is not auto, sync or task", o.Policy)
	}
	switch {
	case o.Timeout < 0:
		return errors.New("field timeout: negative")
	case o.PollInterval < 0:
		return errors.New("field pollInterval: negative")
	}
	if o.Price != nil {
		if err := o.Price.Validate(); err != nil {
			return fmt.Errorf("field price: %v", err)
		}
	}
	return nil
}

// selects reports whether the server's tool name is served.
func (s *Spec) selects(name string) bool {
	if len(s.Tools) == 0 {
		return true
	}
	for _, p := range s.Tools {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
