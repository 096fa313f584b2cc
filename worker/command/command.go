// Package command serves programs as mcpq tools: a command tool's handler
// runs a program (Python on a GPU node, ffmpeg, a model server's CLI) with
// the call's arguments and turns what it writes into the tool's result.
//
// A tools file (YAML or JSON, read by Load; `mcpq worker --tools FILE`)
// declares the tools; a Go program builds them from a Spec with New. The
// protocol between mcpq and the program is in docs/tools.md ("Command
// tools"): arguments substituted as whole argv items (never through a
// shell) and also as a JSON file ($MCPQ_ARGS), progress, status and
// checkpoint lines on file descriptor 3, result content from the files in
// the output folder ($MCPQ_OUTPUT) by MIME type or else from stdout, and
// the last checkpoint back in $MCPQ_CHECKPOINT when the task is delivered
// again.
//
// A cancel, an expiry, the tool's timeout and a worker shutdown stop the
// program: SIGTERM to its process group, SIGKILL to the group after the
// grace period. Whatever is left in the group when the program exits is
// killed too. A non-zero exit, a crash or a timeout is a tool error
// (isError) with the tail of the program's stderr.
package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// DefaultGrace is how long a program has to exit after SIGTERM before its
// process group gets SIGKILL, for specs that set no Grace.
const DefaultGrace = 5 * time.Second

// Spec declares one command tool.
type Spec struct {
	// Name, Title and Description are shown in tools/list.
	Name, Title, Description string
	// InputSchema is the JSON Schema of the arguments (default: any
	// object). Front ends validate calls against it.
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema of the structured result (an
	// object) the program writes to $MCPQ_STRUCTURED; with one declared,
	// every successful run must write a result that matches it.
	OutputSchema json.RawMessage
	// Command is the argv template: Command[0] is the program (looked up
	// on PATH unless it holds a slash; a relative path is relative to
	// Dir). An item that is exactly "{name}" is replaced by argument
	// name's value as one argv item (see Expand); no other item may hold a
	// placeholder.
	Command []string
	// Dir is the program's working directory (default: the worker's).
	Dir string
	// Scratch is a folder (shared by the queue's workers, for a takeover
	// to find it) under which each task gets $MCPQ_SCRATCH, a folder kept
	// across the task's deliveries and removed when the task ends (a
	// result, a tool error, a cancel); "" gives none.
	Scratch string
	// Env is added to the program's environment (see Environ).
	Env map[string]string
	// Links are patterns (path.Match, against an output file's
	// slash-separated path in the output folder or, for a pattern without
	// a slash, its name) of output files that go to the worker's object
	// store as resource_links whatever their size: a video and its
	// thumbnails, for clients to fetch rather than read inline. Without a
	// store they stay inline.
	Links []string
	// AllowNetworks are the IP addresses and prefixes (10.0.0.0/8) that
	// are not public but that the program's URL fetches may reach:
	// $MCPQ_ALLOW_NETWORKS, comma-separated. The program's fetcher
	// enforces it (examples/lib/safefetch.py); none by default.
	AllowNetworks []string
	// Timeout bounds one run of the program (0: only the task's TTL does).
	// A run that takes longer is stopped and is a tool error.
	Timeout time.Duration
	// Grace is how long the program has between SIGTERM and SIGKILL
	// (default DefaultGrace).
	Grace time.Duration
	// Policy, TTL, PollInterval and Queue are as on worker.Tool.
	Policy       worker.Policy
	TTL          time.Duration
	PollInterval time.Duration
	Queue        string
	// Price is as on worker.Tool; the program reports metered usage with
	// {"usage": n} protocol lines.
	Price *proto.Price
	// Scopes are as on worker.Tool.
	Scopes []string
	// Logger receives what the handler logs, such as a malformed protocol
	// line (default slog.Default()).
	Logger *slog.Logger
}

// toolName is what MCP allows as a tool name.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// New returns the tool that runs spec's program. Its error names the
// field that is wrong.
func New(spec Spec) (worker.Tool, error) {
	if err := supported(); err != nil {
		return worker.Tool{}, err
	}
	if err := spec.check(); err != nil {
		if spec.Name == "" {
			return worker.Tool{}, fmt.Errorf("command tool: %w", err)
		}
		return worker.Tool{}, fmt.Errorf("command tool %q: %w", spec.Name, err)
	}
	if spec.Grace <= 0 {
		spec.Grace = DefaultGrace
	}
	if spec.Logger == nil {
		spec.Logger = slog.Default()
	}
	spec.Command = append([]string(nil), spec.Command...)
	out, err := compileOutputSchema(spec.OutputSchema)
	if err != nil {
		return worker.Tool{}, fmt.Errorf("command tool %q: field outputSchema: %w", spec.Name, err)
	}
	r := &runner{spec: spec, out: out, trees: trees(spec.Logger)}
	return worker.Tool{Name: spec.Name, Title: spec.Title, Description: spec.Description,
		InputSchema: spec.InputSchema, OutputSchema: spec.OutputSchema, Policy: spec.Policy, TTL: spec.TTL, PollInterval: spec.PollInterval,
		Queue: spec.Queue, Price: spec.Price, Scopes: spec.Scopes, Handler: r.handle}, nil
}

// check validates spec; errors name the field, not the tool (New adds it).
func (s *Spec) check() error {
	if !toolName.MatchString(s.Name) {
		return fmt.Errorf("field name: %q is not a tool name (1 to 128 of A-Z a-z 0-9 _ . -)", s.Name)
	}
	props, err := schemaProperties(s.InputSchema)
	if err != nil {
		return fmt.Errorf("field inputSchema: %w", err)
	}
	if _, err := compileOutputSchema(s.OutputSchema); err != nil {
		return fmt.Errorf("field outputSchema: %w", err)
	}
	if err := checkTemplate(s.Command, props); err != nil {
		return fmt.Errorf("field command: %w", err)
	}
	if s.Dir != "" {
		fi, err := os.Stat(s.Dir)
		if err != nil {
			return fmt.Errorf("field dir: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("field dir: %s is not a directory", s.Dir)
		}
	}
	if s.Scratch != "" && !filepath.IsAbs(s.Scratch) {
		return fmt.Errorf("field scratch: %s is not an absolute path", s.Scratch)
	}
	if err := checkNetworks(s.AllowNetworks); err != nil {
		return err
	}
	for _, p := range s.Links {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return fmt.Errorf("field links: %q is not a file name pattern (path.Match)", p)
		}
	}
	for k, v := range s.Env {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			return fmt.Errorf("field env: %q is not a variable name", k)
		case strings.HasPrefix(k, reservedEnvPrefix):
			return fmt.Errorf("field env: %s: names starting with %s are mcpq's (docs/tools.md)", k, reservedEnvPrefix)
		case strings.ContainsRune(v, 0):
			return fmt.Errorf("field env: %s: the value holds a NUL byte", k)
		}
	}
	switch {
	case s.Timeout < 0:
		return errors.New("field timeout: negative")
	case s.Grace < 0:
		return errors.New("field grace: negative")
	case s.PollInterval < 0:
		return errors.New("field pollInterval: negative")
	}
	switch s.Policy {
	case "", worker.PolicyAuto, worker.PolicySync, worker.PolicyTask:
	default:
		return fmt.Errorf("field policy: %q is not auto, sync or task", s.Policy)
	}
	return nil
}

// schemaProperties checks that schema is a JSON object schema and returns
// the names of its properties (nil when it declares none).
func schemaProperties(schema json.RawMessage) (map[string]bool, error) {
	if len(schema) == 0 {
		return nil, nil
	}
	var s struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema object: %v", err)
	}
	if s.Type != nil && s.Type != "object" {
		return nil, fmt.Errorf(`"type" is %v; the arguments are an object, so it must be "object"`, s.Type)
	}
	if s.Properties == nil {
		return nil, nil
	}
	props := map[string]bool{}
	for k := range s.Properties {
		props[k] = true
	}
	return props, nil
}
