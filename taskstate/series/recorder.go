package series

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Retention is how long a minute's hash is kept; MaxMinutes the longest
// window Read serves.
const (
	Retention  = 2*time.Hour + 5*time.Minute
	MaxMinutes = 120
)

// FlushInterval is how often Run writes what was counted.
const FlushInterval = time.Second

// flushTimeout bounds the last flush when Run stops.
const flushTimeout = 2 * time.Second

// point is one field of one minute.
type point struct {
	minute int64
	field  string
}

// Recorder counts what a process sees into per-minute fields in memory;
// Flush (Run, each FlushInterval) adds them to the minutes' hashes in one
// pipeline. Counting costs a map update under a mutex and no Redis
// command. A nil *Recorder counts nothing. Safe for concurrent use.
type Recorder struct {
	rdb  redis.UniversalClient
	keys Keys
	now  func() time.Time
	mu   sync.Mutex
	// counts are added (HINCRBY); samples replace (HSET).
	counts  map[point]int64
	samples map[point]int64
}

// NewRecorder returns a Recorder writing under prefix; clock dates what
// it counts (nil: time.Now).
func NewRecorder(rdb redis.UniversalClient, prefix string, clock func() time.Time) *Recorder {
	if clock == nil {
		clock = time.Now
	}
	return &Recorder{rdb: rdb, keys: Keys{Prefix: prefix}, now: clock,
		counts: map[point]int64{}, samples: map[point]int64{}}
}

func (r *Recorder) add(field string, n int64) {
	if r == nil || n == 0 {
		return
	}
	p := point{minute: r.now().Unix() / 60, field: field}
	r.mu.Lock()
	r.counts[p] += n
	r.mu.Unlock()
}

// Created counts a task of tool created.
func (r *Recorder) Created(tool string) { r.add(created+tool, 1) }

// Ended counts a task of tool ("" when unknown) ended in status; took,
// when above 0, is its time from creation to the end.
func (r *Recorder) Ended(tool, status string, took time.Duration) {
	r.add(ended+status+"|"+tool, 1)
	if took > 0 {
		r.add(duration+bucket(took), 1)
	}
}

// Claimed counts a delivery claimed by a worker; pickup, when above 0, is
// the time from the task's creation to its first claim.
func (r *Recorder) Claimed(pickupTime time.Duration) {
	r.add(claimed, 1)
	if pickupTime > 0 {
		r.add(pickup+bucket(pickupTime), 1)
	}
}

// CancelRequested counts a tasks/cancel.
func (r *Recorder) CancelRequested() { r.add(cancels, 1) }

// Takeovers counts n actions of a takeover scan (TakeoverRerun, ...).
func (r *Recorder) Takeovers(action string, n int) { r.add(takeovers+action, int64(n)) }

// Expired counts n tasks finalized at their deadline.
func (r *Recorder) Expired(n int) { r.add(expired, int64(n)) }

// Refused counts a create of tool refused for funds.
func (r *Recorder) Refused(tool string) { r.add(refused+tool, 1) }

// Reserved counts units reserved by a create of tool.
func (r *Recorder) Reserved(tool string, units int64) { r.add(reserved+tool, units) }

// Settled counts a settlement of tool: units charged and released.
func (r *Recorder) Settled(tool string, chargedUnits, releasedUnits int64) {
	r.add(charged+tool, chargedUnits)
	r.add(released+tool, releasedUnits)
}

// Depth samples the pending jobs of queue now.
func (r *Recorder) Depth(queue string, pending int) {
	if r == nil {
		return
	}
	p := point{minute: r.now().Unix() / 60, field: depth + queue}
	r.mu.Lock()
	r.samples[p] = int64(pending)
	r.mu.Unlock()
}

// Flush writes what was counted since the last flush: one pipeline of an
// HINCRBY per counted field, an HSET per sample and a PEXPIREAT per minute.
// What a failed flush could not write is kept for the next one.
func (r *Recorder) Flush(ctx context.Context) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	counts, samples := r.counts, r.samples
	if len(counts) == 0 && len(samples) == 0 {
		r.mu.Unlock()
		return nil
	}
	r.counts, r.samples = map[point]int64{}, map[point]int64{}
	r.mu.Unlock()
	minutes := map[int64]bool{}
	pipe := r.rdb.Pipeline()
	for p, n := range counts {
		pipe.HIncrBy(ctx, r.keys.Minute(p.minute), p.field, n)
		minutes[p.minute] = true
	}
	for p, v := range samples {
		pipe.HSet(ctx, r.keys.Minute(p.minute), p.field, v)
		minutes[p.minute] = true
	}
	for m := range minutes {
		pipe.PExpireAt(ctx, r.keys.Minute(m), time.Unix(m*60, 0).Add(Retention))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		r.putBack(counts, samples)
		return err
	}
	return nil
}

// putBack keeps a failed flush's numbers for the next one (a newer sample
// wins over a kept one). A pipeline that failed part way may have written
// some counts: they are counted again, an over-count bounded by one flush.
func (r *Recorder) putBack(counts, samples map[point]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, n := range counts {
		r.counts[p] += n
	}
	for p, v := range samples {
		if _, ok := r.samples[p]; !ok {
			r.samples[p] = v
		}
	}
}

// Run flushes every FlushInterval until ctx ends, then once more (bounded
// by flushTimeout) so a process stopping in order loses nothing. onErr is
// told of a failed flush (nil: ignored).
func (r *Recorder) Run(ctx context.Context, onErr func(error)) {
	if r == nil {
		return
	}
	tick := time.NewTicker(FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
			defer cancel()
			if err := r.Flush(fctx); err != nil && onErr != nil {
				onErr(err)
			}
			return
		case <-tick.C:
			if err := r.Flush(ctx); err != nil && onErr != nil && ctx.Err() == nil {
				onErr(err)
			}
		}
	}
}
