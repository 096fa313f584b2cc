package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/catalog"
)

// Handler runs one tool call. It returns the tool's result; a *proto.Error
// ends the task failed (a protocol error); ErrCancelled (from Call.Step)
// ends it cancelled; any other error is a tool error: the task completes
// with isError and the error's text.
type Handler func(ctx context.Context, c *Call) (*proto.CallToolResult, error)

// Tool is a tool a worker serves.
type Tool struct {
	// Name, Title and Description are shown in tools/list.
	Name, Title, Description string
	// InputSchema is the JSON Schema of the arguments (default: any object).
	// Every front end validates a call's arguments against it before a task
	// exists (NewTool infers it from a Go type).
	InputSchema json.RawMessage
	// OutputSchema is the optional JSON Schema of the result's
	// structuredContent (NewTool infers it from a struct result type).
	OutputSchema json.RawMessage
	// Annotations (behaviour hints such as readOnlyHint) and Icons are
	// shown in tools/list as given (JSON; optional).
	Annotations, Icons json.RawMessage
	// Policy is PolicyAuto (the default), PolicySync or PolicyTask.
	Policy Policy
	// SyncBudget is how long an auto call waits for the result before it
	// becomes a task (0: the front end's default).
	SyncBudget time.Duration
	// TTL is the task lifetime (0: the front end's default; negative: unlimited where allowed).
	TTL time.Duration
	// PollInterval is the polling interval suggested to clients (0: default).
	PollInterval time.Duration
	// Queue is the asynq queue the job goes to (default DefaultQueue).
	Queue string
	// Price, when not nil, is what a call reserves where billing is on
	// (docs/billing.md): a fixed base plus amounts per argument, computed
	// by the front end from the arguments. The handler reports metered
	// usage with Call.Meter; the task is charged that, up to the
	// reservation. Nil: the tool is free.
	Price *proto.Price
	// Scopes are the OAuth scopes a caller's token must hold for the tool
	// to be listed and called (docs/auth.md); API keys are not limited by
	// scope. Empty: any authenticated caller.
	Scopes []string
	// Handler runs the call.
	Handler Handler

	// err is why NewTool could not build the tool; New and AddTool report it.
	err error
}

// LedgerHook forwards billing to an external payment system
// (Config.LedgerHook; docs/billing.md, "Settlement hook"). It never runs
// inside a task's transition: each principal's ledger is its outbox. The
// worker offers every principal's entries after the last one Forward
// acknowledged, and moves on only when Forward returned nil, so a failing
// or slow hook loses nothing and holds up no task. Delivery is at least
// once: an entry may be offered again (after an error, or by two workers
// at once); its ID is unique and time-ordered, the key to drop a repeat by.
type LedgerHook interface {
	// Forward receives entries of one principal's ledger in ledger order,
	// oldest first. principal is empty for an account written before
	// accounts kept the name; owner is its opaque tag in key names.
	Forward(ctx context.Context, principal, owner string, entries []proto.LedgerEntry) error
}

// Policy is a tool's execution policy: who decides whether a call becomes
// a task.
type Policy = proto.Policy

// Execution policies.
const (
	// PolicyAuto (the default) waits up to the tool's sync budget for the
	// result, then hands out a task.
	PolicyAuto = proto.PolicyAuto
	// PolicySync never makes a task: the front end waits for the result.
	PolicySync = proto.PolicySync
	// PolicyTask always makes a task; clients without the Tasks extension
	// get -32021.
	PolicyTask = proto.PolicyTask
)

// DefaultQueue is the queue of tools that name none.
const DefaultQueue = "mcpq"

// def is the catalog entry of t.
func (t Tool) def() catalog.Entry {
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	ttl := t.TTL.Milliseconds()
	if t.TTL < 0 {
		ttl = catalog.UnlimitedTTL
	}
	return catalog.Entry{
		Tool: proto.Tool{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: schema, OutputSchema: t.OutputSchema,
			Annotations: t.Annotations, Icons: t.Icons},
		Policy:         t.Policy,
		SyncBudgetMs:   t.SyncBudget.Milliseconds(),
		TTLMs:          ttl,
		PollIntervalMs: t.PollInterval.Milliseconds(),
		Queue:          t.queue(),
		Price:          t.Price,
		Scopes:         t.Scopes,
	}
}

func (t Tool) queue() string {
	if t.Queue == "" {
		return DefaultQueue
	}
	return t.Queue
}

func (t Tool) validate() error {
	switch {
	case t.err != nil:
		return t.err
	case t.Name == "":
		return errors.New("worker: tool without a name")
	case t.Handler == nil:
		return fmt.Errorf("worker: tool %q has no handler", t.Name)
	case strings.Contains(t.Queue, queue.ShardSep):
		return fmt.Errorf("worker: tool %q: queue %q: %q is kept for the names of a queue's shards (docs/deploy.md, \"Queue shards\")",
			t.Name, t.Queue, queue.ShardSep)
	}
	switch t.Policy {
	case "", PolicyAuto, PolicySync, PolicyTask:
	default:
		return fmt.Errorf("worker: tool %q: unknown policy %q", t.Name, t.Policy)
	}
	if t.Price != nil {
		if err := t.Price.Validate(); err != nil {
			return fmt.Errorf("worker: tool %q: %w", t.Name, err)
		}
	}
	if len(t.InputSchema) > 0 && !json.Valid(t.InputSchema) {
		return fmt.Errorf("worker: tool %q: input schema is not JSON", t.Name)
	}
	if len(t.OutputSchema) > 0 && !json.Valid(t.OutputSchema) {
		return fmt.Errorf("worker: tool %q: output schema is not JSON", t.Name)
	}
	if len(t.Annotations) > 0 && !json.Valid(t.Annotations) || len(t.Icons) > 0 && !json.Valid(t.Icons) {
		return fmt.Errorf("worker: tool %q: annotations or icons are not JSON", t.Name)
	}
	return nil
}

// TextResult is a successful result with one text block.
func TextResult(text string) *proto.CallToolResult {
	return &proto.CallToolResult{Content: []proto.Content{proto.TextContent(text)}}
}

// ErrorResult is a tool error (isError) with one text block.
func ErrorResult(text string) *proto.CallToolResult {
	return &proto.CallToolResult{Content: []proto.Content{proto.TextContent(text)}, IsError: true}
}
