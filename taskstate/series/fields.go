// Package series keeps the operator view's numbers over time
// (docs/dashboard.md, "Numbers over time"): per-minute counters and samples
// of the whole fleet, one small Redis hash per minute. Front ends and
// workers count into a Recorder in memory (no Redis command on the task's
// path) and flush it once a second in one pipeline; GET /v1/ops/series
// reads the last hour back with one pipeline of HGETALLs (Read).
//
// A minute's hash holds one field per thing counted, named here: the
// counts of tools, statuses, queues and latency buckets, never a task id
// or a principal, so its size does not grow with the number of tasks.
package series

import (
	"strconv"
	"strings"
	"time"
)

// Field names of a minute's hash. A tool or queue name comes last, so it
// may hold any character.
const (
	// created counts tasks created, "c|<tool>" (front ends).
	created = "c|"
	// ended counts tasks ended, "e|<status>|<tool>": by a worker's run
	// (with its tool), a front end's cancel of a task no worker held, or a
	// takeover scan's end (tool unknown: "").
	ended = "e|"
	// claimed counts deliveries a worker claimed: jobs out of the queues.
	claimed = "k"
	// cancels counts cancel requests (tasks/cancel).
	cancels = "x"
	// takeovers counts the takeover scans' actions, "t|<action>".
	takeovers = "t|"
	// expired counts tasks finalized at their deadline.
	expired = "xp"
	// refused counts creates refused for funds, "r|<tool>".
	refused = "r|"
	// reserved, charged and released are billing units by tool.
	reserved = "br|"
	charged  = "bc|"
	released = "bl|"
	// depth is a queue's pending jobs, sampled, "q|<queue>" (last sample
	// of the minute).
	depth = "q|"
	// pickup and duration are latency histograms, "p|<bucket>" and
	// "d|<bucket>": the index in bucketBounds of the first bound at or
	// above the observation.
	pickup   = "p|"
	duration = "d|"
)

// Takeover actions counted under takeovers.
const (
	TakeoverRerun     = "rerun"
	TakeoverFailed    = "failed"
	TakeoverCancelled = "cancelled"
)

// bucketBounds are the latency histograms' upper bounds in ms; the last
// bucket (index len) holds everything longer.
var bucketBounds = [...]int64{10, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000}

// bucket is the histogram field suffix of a latency d.
func bucket(d time.Duration) string {
	ms := d.Milliseconds()
	for i, b := range bucketBounds {
		if ms <= b {
			return strconv.Itoa(i)
		}
	}
	return strconv.Itoa(len(bucketBounds))
}

// bucketBound is the upper bound in ms of bucket i; past the last bound it
// is the last bound (the histogram says "longer than that").
func bucketBound(i int) int64 {
	return bucketBounds[min(i, len(bucketBounds)-1)]
}

// split cuts a field into its kind prefix (through the first '|', or the
// whole name) and the rest.
func split(field string) (kind, rest string) {
	i := strings.IndexByte(field, '|')
	if i < 0 {
		return field, ""
	}
	return field[:i+1], field[i+1:]
}
