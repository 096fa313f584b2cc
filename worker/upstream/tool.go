package upstream

import (
	"encoding/json"
	"time"

	"github.com/mcpq/mcpq/worker"
)

// upstreamTool is a tools/list entry of an upstream.
type upstreamTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
	Icons        json.RawMessage `json:"icons"`
	Execution    struct {
		TaskSupport string `json:"taskSupport"`
	} `json:"execution"`
}

// taskable reports whether a 2025-11-25 upstream runs the tool as a task
// when asked (execution.taskSupport "required" or "optional").
func (u upstreamTool) taskable() bool {
	return u.Execution.TaskSupport == "required" || u.Execution.TaskSupport == "optional"
}

// rerunnable reports whether the upstream declares the tool safe to run
// again: idempotentHint or readOnlyHint.
func (u upstreamTool) rerunnable() bool {
	var a struct {
		ReadOnly   bool `json:"readOnlyHint"`
		Idempotent bool `json:"idempotentHint"`
	}
	_ = json.Unmarshal(u.Annotations, &a)
	return a.ReadOnly || a.Idempotent
}

// tool is the mcpq tool serving u, with the spec's settings and overrides.
func (s *Server) tool(u upstreamTool) worker.Tool {
	o := s.spec.Overrides[u.Name]
	queue := s.spec.Queue
	if o.Queue != "" {
		queue = o.Queue
	}
	timeout := s.spec.Timeout
	if o.Timeout > 0 {
		timeout = o.Timeout
	}
	rerun := s.spec.Rerun || u.rerunnable()
	if o.Rerun != nil {
		rerun = *o.Rerun || u.rerunnable()
	}
	return worker.Tool{Name: s.spec.Prefix + u.Name, Title: u.Title, Description: u.Description,
		InputSchema: nonNull(u.InputSchema), OutputSchema: nonNull(u.OutputSchema),
		Annotations: nonNull(u.Annotations), Icons: nonNull(u.Icons),
		Policy: o.Policy, TTL: o.TTL, PollInterval: o.PollInterval, Queue: queue, Price: o.Price,
		Handler: s.handler(u, rerun, timeout)}
}

// nonNull drops a JSON null (an absent field).
func nonNull(b json.RawMessage) json.RawMessage {
	if string(b) == "null" {
		return nil
	}
	return b
}

// progressEvery is how often at most a call writes the upstream's progress
// into the task: a flood of notifications costs no more writes.
const progressEvery = 200 * time.Millisecond
