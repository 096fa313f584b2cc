package taskstate

import (
	"context"
	"encoding/json"
	"fmt"
)

// Claim is what a worker gets when it starts a task's job.
type Claim struct {
	// Attempt is this delivery's attempt number; every later write carries it.
	Attempt int64
	// Tool and Arguments are the call to run.
	Tool      string
	Arguments json.RawMessage
}

// Claim starts a delivery of the task's job. It returns ErrTerminal when the
// task already ended (the job is a no-op), ErrCancelled when a cancel was
// requested before the start (the task is now cancelled), ErrExpired,
// ErrNotFound, or ErrIllegal when the task is not working.
func (s *Store) Claim(ctx context.Context, ref Ref) (*Claim, error) {
	res, err := claimScript.Run(ctx, s.rdb, []string{s.keys.Task(ref)}, s.nowMs(), s.keys.Events(ref)).Slice()
	if err != nil {
		return nil, err
	}
	code, _ := res[0].(int64)
	if code != codeOK {
		return nil, codeErr(code)
	}
	if len(res) != 4 {
		return nil, fmt.Errorf("taskstate: claim returned %d values", len(res))
	}
	c := &Claim{}
	c.Attempt, _ = res[1].(int64)
	c.Tool, _ = res[2].(string)
	args, _ := res[3].(string)
	c.Arguments = json.RawMessage(args)
	return c, nil
}
