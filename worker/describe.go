package worker

import (
	"context"
	"sort"
	"time"

	"github.com/mcpq/mcpq/taskstate/catalog"
)

// describe writes the worker's self-description for the operator view
// (catalog.WorkerInfo): its queues and slots, the deliveries running now
// and the entries it serves (keys), live for ServedIntervals intervals.
func (w *Worker) describe(ctx context.Context, keys []string) error {
	w.mu.Lock()
	info := catalog.WorkerInfo{Name: w.cfg.Name, Tools: keys, StartedAt: w.started}
	for q, n := range w.queues {
		info.Queues = append(info.Queues, q)
		if len(w.cfg.Queues) > 0 {
			info.Slots += n
		}
	}
	w.mu.Unlock()
	if len(w.cfg.Queues) == 0 {
		info.Slots = w.cfg.Concurrency // one server shares it over every queue
	}
	sort.Strings(info.Queues)
	sort.Strings(info.Tools)
	w.jobsMu.Lock()
	for _, attempts := range w.jobs {
		info.Busy += len(attempts)
	}
	w.jobsMu.Unlock()
	info.Heartbeat = w.store.Now()
	info.Until = info.Heartbeat.Add(ServedIntervals * w.cfg.CatalogInterval)
	return w.store.Catalog().Heartbeat(ctx, info)
}

// forget removes the worker's self-description as it stops, so the
// operator view drops it at once rather than when it times out.
func (w *Worker) forget() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := w.store.Catalog().Forget(ctx, w.cfg.Name); err != nil {
		w.log.Warn("forget worker", "err", err)
	}
}
