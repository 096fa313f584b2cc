package worker

import "errors"

// Redelivered reports whether err, returned by a Call's method, means the
// task is not ending with this run: it waits for input (Call.Input parked
// it), the task store was unreachable (the job is delivered again), or the
// task is no longer this attempt's. A handler that keeps files across
// deliveries (a command tool's scratch folder) keeps them then.
func Redelivered(err error) bool {
	var transient *transientError
	return errors.Is(err, errParked) || errors.Is(err, errStop) || errors.As(err, &transient)
}
