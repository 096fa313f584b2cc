package taskstate

import "context"

// Worker returns the id this store claims tasks under (Options.Worker);
// its liveness is its lease in the catalog (catalog.Catalog.Lease).
func (s *Store) Worker() string { return s.worker }

// Release gives up attempt's hold on the task without an outcome (its
// worker is shutting down and the job goes back to its queue): the task
// stays working, unclaimed, for the job's next delivery to claim at once.
// ErrStale when another attempt holds it; NotOwned errors as Heartbeat.
func (s *Store) Release(ctx context.Context, ref Ref, attempt int64) error {
	return s.runKeys(ctx, releaseScript, []string{s.keys.Task(ref), s.keys.held(ref.Owner)}, s.nowMs(), attempt, ref.ID)
}
