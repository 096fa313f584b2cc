package taskstate

import (
	"context"
	"fmt"
)

// Claim is what a worker gets when it starts a task's job.
type Claim struct {
	// Attempt is this delivery's attempt number; every later write carries it.
	Attempt int64
	// Record is the task as claimed: the call, its answers and checkpoint.
	Record *Record
}

// Claim starts a delivery of the task's job number seq (job.Seq of the
// job's id). It returns ErrTerminal when the task already ended (the job is
// a no-op), ErrStale when seq is not the task's current job (a late
// delivery of a job the task was taken back from), ErrCancelled when a
// cancel was requested before the start (the task is now cancelled),
// ErrExpired, ErrNotFound, or ErrIllegal when the task is not working
// (parked for input).
func (s *Store) Claim(ctx context.Context, ref Ref, seq int64) (*Claim, error) {
	res, err := claimScript.Run(ctx, s.rdb, s.liveKeys(ref), s.nowMs(), s.keys.Events(ref), ref.ID,
		seq, s.lost.Milliseconds()).Slice()
	if err != nil {
		return nil, err
	}
	code, _ := res[0].(int64)
	if code != codeOK {
		return nil, codeErr(code)
	}
	if len(res) < 2 || len(res)%2 != 0 {
		return nil, fmt.Errorf("taskstate: claim returned %d values", len(res))
	}
	c := &Claim{}
	c.Attempt, _ = res[1].(int64)
	fields := make(map[string]string, (len(res)-2)/2)
	for i := 2; i+1 < len(res); i += 2 {
		k, _ := res[i].(string)
		v, _ := res[i+1].(string)
		fields[k] = v
	}
	rec, ok := decodeRecord(ref, fields)
	if !ok {
		return nil, fmt.Errorf("taskstate: claim returned no record")
	}
	c.Record = rec
	return c, nil
}
