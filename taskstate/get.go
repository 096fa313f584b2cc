package taskstate

import "context"

// Get reads a task record. A missing record, a malformed id and a record
// whose TTL has passed all answer ErrNotFound.
func (s *Store) Get(ctx context.Context, ref Ref) (*Record, error) {
	if !ValidID(ref.ID) {
		return nil, ErrNotFound
	}
	f, err := s.rdb.HGetAll(ctx, s.keys.Task(ref)).Result()
	if err != nil {
		return nil, err
	}
	r, ok := decodeRecord(ref, f)
	if !ok || r.Expired(s.now()) {
		return nil, ErrNotFound
	}
	return r, nil
}
