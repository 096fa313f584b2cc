package taskstate

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpq/mcpq/proto"
)

// HandBack gives back the task's job number seq, delivered to a worker that
// does not serve the task's tool: the task stays working and unclaimed,
// and next is the new number of the job to enqueue in its place. With
// unserved not nil (no live worker serves the tool) the task ends failed
// with that error instead, its reservation released, and next is 0. It
// returns ErrCancelled when a cancel was requested before (the task is now
// cancelled), and ErrTerminal, ErrStale, ErrExpired, ErrNotFound or
// ErrIllegal (parked, or held by a delivery) when the job is a no-op.
func (s *Store) HandBack(ctx context.Context, ref Ref, seq int64, unserved *proto.Error) (next int64, err error) {
	failure, message := "", ""
	if unserved != nil {
		b, err := json.Marshal(unserved)
		if err != nil {
			return 0, err
		}
		failure, message = string(b), unserved.Message
	}
	res, err := s.run(ctx, handBackScript, s.liveKeys(ref), s.nowMs(), s.keys.Events(ref), ref.ID, seq,
		failure, message).Slice()
	if err != nil {
		return 0, err
	}
	if len(res) == 0 {
		return 0, fmt.Errorf("taskstate: handback returned no values")
	}
	code, _ := res[0].(int64)
	switch {
	case code == codeCancelled:
		s.settledAt(res, 1)
		return 0, ErrCancelled
	case code != codeOK:
		return 0, codeErr(code)
	case len(res) < 2:
		return 0, fmt.Errorf("taskstate: handback returned %d values", len(res))
	}
	next, _ = res[1].(int64)
	s.settledAt(res, 2)
	return next, nil
}
