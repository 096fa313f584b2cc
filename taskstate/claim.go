package taskstate

import (
	"context"
	"fmt"
	"strconv"
)

// Share is how many of one principal's tasks may run at once on a queue,
// counted across every worker of the deployment.
type Share struct {
	// Queue is the mcpq queue the job was delivered on.
	Queue string
	// Max is the most of the principal's tasks that run on Queue at once;
	// 0 means no share (any number).
	Max int
}

// BusyError is Claim's answer when the task's principal already runs
// Share.Max tasks on the queue: the task was not claimed and its job is
// done with; job Seq is the one to enqueue, after a short delay. It
// matches ErrBusy.
type BusyError struct {
	// Seq is the number of the task's next job.
	Seq int64
	// Running is how many of the principal's tasks run on the queue.
	Running int64
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("taskstate: the principal already runs %d tasks on the queue; run job %d later", e.Running, e.Seq)
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Claim is what a worker gets when it starts a task's job.
type Claim struct {
	// Attempt is this delivery's attempt number; every later write carries it.
	Attempt int64
	// Record is what a run reads of the task (call, checkpoint, answers,
	// times, TTL, job sequence, new state); other fields may be zero.
	Record *Record
}

// Claim starts a delivery of the task's job number seq (its job id carries
// it). It returns ErrTerminal when the task already ended (the job is
// a no-op), ErrStale when seq is not the task's current job (a late
// delivery of a job the task was taken back from), ErrCancelled when a
// cancel was requested before the start (the task is now cancelled),
// ErrExpired, ErrNotFound, ErrIllegal when the task is not working
// (parked for input), or ErrHeld when another worker's delivery holds it
// (the takeover scan, not a second delivery, takes a task from a worker). Under a share (share.Max > 0) it returns a
// *BusyError when the principal already runs share.Max tasks on
// share.Queue; the check and the claim are one script, so concurrent
// claims cannot pass the share, and it costs no extra round trip.
func (s *Store) Claim(ctx context.Context, ref Ref, seq int64, share Share) (*Claim, error) {
	return s.ClaimBeside(ctx, ref, seq, share, nil)
}

// ClaimBeside is Claim for a worker in which attempts of the task still
// run (a stale delivery that has not learnt it yet): it returns ErrHeld
// when the task's current attempt is one of them, and claims the task
// from a holder that is this worker but no longer runs it.
func (s *Store) ClaimBeside(ctx context.Context, ref Ref, seq int64, share Share, running []int64) (*Claim, error) {
	local := ","
	for _, a := range running {
		local += strconv.FormatInt(a, 10) + ","
	}
	keys := append(s.liveKeys(ref), s.keys.running(ref.Owner, share.Queue))
	res, err := s.runStrings(ctx, claimScript, keys, s.nowMs(), s.keys.Events(ref), ref.ID,
		seq, s.lost.Milliseconds(), max(share.Max, 0), share.Queue, s.worker, local)
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("taskstate: claim returned no values")
	}
	num := func(i int) int64 {
		n, _ := strconv.ParseInt(res[i], 10, 64)
		return n
	}
	code := num(0)
	if code == codeBusy {
		if len(res) < 3 {
			return nil, fmt.Errorf("taskstate: claim returned %d values", len(res))
		}
		return nil, &BusyError{Seq: num(1), Running: num(2)}
	}
	if code != codeOK {
		if code == codeCancelled && len(res) >= 3 {
			s.noteSettled(res[2], res[1])
		}
		return nil, codeErr(code)
	}
	if len(res)%2 != 0 {
		return nil, fmt.Errorf("taskstate: claim returned %d values", len(res))
	}
	c := &Claim{Attempt: num(1)}
	rec, ok := decodePairs(ref, res[2:])
	if !ok {
		return nil, fmt.Errorf("taskstate: claim returned no record")
	}
	c.Record = rec
	return c, nil
}
