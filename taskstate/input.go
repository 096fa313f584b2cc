package taskstate

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
)

// RequestInput parks the task in input_required with keyed requests (each
// {method, params}) for attempt. Keys must never have been issued before in
// the task's life (ErrKeyReused). ErrCancelled means a cancel was requested;
// nothing is written on any error.
func (s *Store) RequestInput(ctx context.Context, ref Ref, attempt int64, reqs map[string]json.RawMessage) error {
	return s.input(ctx, ref, attempt, reqs, "0")
}

// HoldInput is RequestInput for a delivery that waits for the answers
// itself: the task moves to input_required but stays held by attempt (its
// heartbeats, its place in its queue's running set, takeover when it is
// lost); once the last answer arrived the task is working again and no job
// is enqueued (AnswerResult.Resume is 0). Taken over while waiting, its
// pending requests are dropped and it runs again (scripts/takeover.lua).
func (s *Store) HoldInput(ctx context.Context, ref Ref, attempt int64, reqs map[string]json.RawMessage) error {
	return s.input(ctx, ref, attempt, reqs, "1")
}

func (s *Store) input(ctx context.Context, ref Ref, attempt int64, reqs map[string]json.RawMessage, hold string) error {
	if len(reqs) == 0 {
		return errors.New("taskstate: no input requests")
	}
	args := []any{s.nowMs(), attempt, s.keys.Events(ref), ref.ID, hold}
	for _, k := range sortedKeys(reqs) {
		args = append(args, k, string(reqs[k]))
	}
	return s.runKeys(ctx, inputScript, []string{s.keys.Task(ref), s.keys.held(ref.Owner)}, args...)
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
