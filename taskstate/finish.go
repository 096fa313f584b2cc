package taskstate

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/proto"
)

// Outcome is how a task ends.
type Outcome struct {
	// Status is completed, failed or cancelled.
	Status proto.TaskStatus
	// Result is the CallToolResult JSON (completed).
	Result json.RawMessage
	// Error is the JSON-RPC error (failed).
	Error *proto.Error
	// StatusMessage is the final statusMessage.
	StatusMessage string
	// Beside, if set, rides after the outcome in its round trip (not on a Cluster).
	Beside Job
}

// Finish ends the task for attempt. It returns ErrCancelled when a cancel
// was acknowledged before: the task is then written "cancelled", whatever
// the outcome. It returns ErrTerminal when the task already ended,
// ErrStale when a newer attempt owns it, ErrIllegal when the table refuses
// or the target is not terminal, ErrExpired or ErrNotFound; nothing is
// written then.
func (s *Store) Finish(ctx context.Context, ref Ref, attempt int64, o Outcome) error {
	field, payload := "", []byte(nil)
	switch o.Status {
	case proto.StatusCompleted:
		field, payload = "result", o.Result
	case proto.StatusFailed:
		if o.Error == nil {
			return fmt.Errorf("taskstate: failed outcome without error")
		}
		b, err := json.Marshal(o.Error)
		if err != nil {
			return err
		}
		field, payload = "error", b
	}
	keys, args := s.liveKeys(ref), []any{s.nowMs(), attempt, string(o.Status), field, string(payload),
		o.StatusMessage, s.keys.Events(ref), ref.ID}
	if _, cluster := s.rdb.(*redis.ClusterClient); o.Beside == nil || cluster {
		return s.runKeys(ctx, finishScript, keys, args...)
	}
	pipe := s.rdb.Pipeline()
	rc := s.send(ctx, pipe, finishScript, keys, args...)
	o.Beside.Pipe(ctx, pipe)
	_, _ = pipe.Exec(ctx)
	if isMissing(rc.Err()) {
		rc = s.run(ctx, finishScript, keys, args...)
	}
	_ = o.Beside.Result(ctx, s.rdb)
	return s.replyErr(rc)
}
