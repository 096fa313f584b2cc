package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// WorkerInfo is what a worker says about itself on each catalog
// heartbeat, for the operator view (docs/dashboard.md).
type WorkerInfo struct {
	// Name is the worker's name (worker.Config.Name).
	Name string `json:"name"`
	// Queues are the queues the worker serves.
	Queues []string `json:"queues"`
	// Slots is how many deliveries it runs at once, over all its queues.
	Slots int `json:"slots"`
	// Busy is how many of them run now.
	Busy int `json:"busy"`
	// Tools are the catalog keys it serves.
	Tools []string `json:"tools"`
	// StartedAt is when the worker process started.
	StartedAt time.Time `json:"startedAt"`
	// Heartbeat is when it last wrote this.
	Heartbeat time.Time `json:"heartbeat"`
	// Until is when the worker counts as gone without another heartbeat.
	Until time.Time `json:"until"`
}

// forgetAfter is how long a gone worker's entry stays before a heartbeat
// of another worker drops it.
const forgetAfter = time.Hour

// Heartbeat writes the worker's self-description (Heartbeat and Until set
// by the caller) and drops the entries of workers gone for an hour.
func (s *Catalog) Heartbeat(ctx context.Context, w WorkerInfo) error {
	b, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("catalog: encode worker %s: %w", w.Name, err)
	}
	if err := s.rdb.HSet(ctx, s.keys.workers(), w.Name, b).Err(); err != nil {
		return fmt.Errorf("catalog: write worker %s: %w", w.Name, err)
	}
	all, err := s.allWorkers(ctx)
	if err != nil {
		return err
	}
	for _, o := range all {
		if s.now().Sub(o.Until) > forgetAfter {
			if err := s.rdb.HDel(ctx, s.keys.workers(), o.Name).Err(); err != nil {
				return fmt.Errorf("catalog: drop worker %s: %w", o.Name, err)
			}
		}
	}
	return nil
}

// Forget removes the worker's entry (a worker that stops cleanly).
func (s *Catalog) Forget(ctx context.Context, name string) error {
	return s.rdb.HDel(ctx, s.keys.workers(), name).Err()
}

// Workers lists the live workers (Until after now), by name.
func (s *Catalog) Workers(ctx context.Context) ([]WorkerInfo, error) {
	all, err := s.allWorkers(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now()
	live := all[:0]
	for _, w := range all {
		if w.Until.After(now) {
			live = append(live, w)
		}
	}
	return live, nil
}

func (s *Catalog) allWorkers(ctx context.Context) ([]WorkerInfo, error) {
	m, err := s.rdb.HGetAll(ctx, s.keys.workers()).Result()
	if err != nil {
		return nil, fmt.Errorf("catalog: read workers: %w", err)
	}
	out := make([]WorkerInfo, 0, len(m))
	for name, v := range m {
		var w WorkerInfo
		if json.Unmarshal([]byte(v), &w) != nil {
			continue // not a WorkerInfo: left out
		}
		w.Name = name
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
