package taskstate

import (
	"context"
	"encoding/json"
	"fmt"
)

// AnswerResult says what an Answer did.
type AnswerResult struct {
	// Applied counts the answers that matched pending requests.
	Applied int64
	// Resume is > 0 when the last pending request was answered and the task
	// is working again: the caller enqueues its job (Resume numbers the
	// resumption, for a unique job id).
	Resume int64
}

// Answer applies input responses (tasks/update, or an MRTR retry). Answers
// to keys that are not pending are ignored, so a repeated update is
// harmless. A task that is not waiting for input is left alone (zero
// result); ErrTerminal, ErrNotFound and ErrExpired report the rest.
func (s *Store) Answer(ctx context.Context, ref Ref, answers map[string]json.RawMessage) (AnswerResult, error) {
	if !ValidID(ref.ID) {
		return AnswerResult{}, ErrNotFound
	}
	args := []any{s.nowMs(), s.keys.Events(ref)}
	for _, k := range sortedKeys(answers) {
		args = append(args, k, string(answers[k]))
	}
	reply, replicaErr := s.runWaited(ctx, updateScript, []string{s.keys.Task(ref)}, args...)
	res, err := reply.Slice()
	if err != nil {
		return AnswerResult{}, err
	}
	code, _ := res[0].(int64)
	if code != codeOK {
		return AnswerResult{}, codeErr(code)
	}
	if len(res) != 3 {
		return AnswerResult{}, fmt.Errorf("taskstate: update returned %d values", len(res))
	}
	applied, _ := res[1].(int64)
	resume, _ := res[2].(int64)
	// A *ReplicaError comes with the result: a resumed task still needs its job.
	return AnswerResult{Applied: applied, Resume: resume}, replicaErr
}
