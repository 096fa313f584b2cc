package taskstate

import (
	"context"
	"encoding/json"
)

// SaveCheckpoint stores the handler's checkpoint for attempt.
func (s *Store) SaveCheckpoint(ctx context.Context, ref Ref, attempt int64, cp json.RawMessage) error {
	return s.runCode(ctx, checkpointScript, ref, s.nowMs(), attempt, string(cp))
}
