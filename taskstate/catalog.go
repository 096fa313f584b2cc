package taskstate

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"github.com/mcpq/mcpq/proto"
)

// Execution policies: who decides whether a call becomes a task.
const (
	// PolicySync never makes a task: the front end waits for the result.
	PolicySync = "sync"
	// PolicyTask always makes a task; clients without the Tasks extension get -32021.
	PolicyTask = "task"
	// PolicyAuto waits up to the sync budget, then hands out a task.
	PolicyAuto = "auto"
)

// UnlimitedTTL in ToolDef.TTLMs asks for tasks without expiry (ttlMs null),
// where the front end allows it.
const UnlimitedTTL = -1

// ToolDef is a tool as workers publish it and front ends serve it.
type ToolDef struct {
	// Tool is the tools/list entry.
	Tool proto.Tool `json:"tool"`
	// Policy is sync, task or auto (the default when empty).
	Policy string `json:"policy,omitempty"`
	// SyncBudgetMs is how long an auto call waits before it becomes a task
	// (0: the front end's default).
	SyncBudgetMs int64 `json:"syncBudgetMs,omitempty"`
	// TTLMs is the task lifetime (0: the front end's default; UnlimitedTTL: null).
	TTLMs int64 `json:"ttlMs,omitempty"`
	// PollIntervalMs is the polling interval suggested to clients (0: default).
	PollIntervalMs int64 `json:"pollIntervalMs,omitempty"`
	// Queue is the asynq queue the tool's workers serve.
	Queue string `json:"queue"`
	// PublishedAt is when a worker last published the definition.
	PublishedAt time.Time `json:"publishedAt"`
}

// PublishTools writes the definitions into the shared catalog, replacing
// earlier ones of the same name.
func (s *Store) PublishTools(ctx context.Context, defs []ToolDef) error {
	if len(defs) == 0 {
		return nil
	}
	now := s.now()
	args := make([]any, 0, 2*len(defs))
	for _, d := range defs {
		d.PublishedAt = now
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		args = append(args, d.Tool.Name, b)
	}
	return s.rdb.HSet(ctx, s.keys.Catalog(), args...).Err()
}

// Tools reads the catalog, sorted by tool name. Entries that do not decode
// are skipped.
func (s *Store) Tools(ctx context.Context) ([]ToolDef, error) {
	m, err := s.rdb.HGetAll(ctx, s.keys.Catalog()).Result()
	if err != nil {
		return nil, err
	}
	defs := make([]ToolDef, 0, len(m))
	for _, v := range m {
		var d ToolDef
		if json.Unmarshal([]byte(v), &d) == nil && d.Tool.Name != "" {
			defs = append(defs, d)
		}
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Tool.Name < defs[j].Tool.Name })
	return defs, nil
}

// JobType is the asynq task type of a task's job; the payload is the JSON Ref.
const JobType = "mcpq:run"

// EncodeJob is the asynq payload for the task's job.
func EncodeJob(ref Ref) []byte {
	b, _ := json.Marshal(ref)
	return b
}

// DecodeJob reads a payload EncodeJob made.
func DecodeJob(b []byte) (Ref, error) {
	var r Ref
	err := json.Unmarshal(b, &r)
	return r, err
}
