package taskstate

import (
	"strconv"
	"strings"
	"time"
)

// Timeline entry kinds (TimelineEntry.Kind), as scripts/timeline.lua
// writes them into the record's field 'tl'.
const (
	// TimelineStarted: a delivery claimed the task (Attempt, Worker).
	TimelineStarted = "started"
	// TimelineAsked: the task asked for input (Detail: the request keys).
	TimelineAsked = "input_requested"
	// TimelineAnswered: answers arrived (Detail: their keys).
	TimelineAnswered = "answered"
	// TimelineLost: the attempt's worker went silent and the task was
	// taken back (Attempt: the lost one).
	TimelineLost = "lost"
	// TimelineCancelRequested: a cancel was requested while the task ran.
	TimelineCancelRequested = "cancel_requested"
	// TimelineEnded: the task ended (Detail: its final status).
	TimelineEnded = "ended"
)

// timelineKinds maps the one-letter kinds of the record's text to names.
var timelineKinds = map[byte]string{'s': TimelineStarted, 'q': TimelineAsked, 'a': TimelineAnswered,
	'l': TimelineLost, 'x': TimelineCancelRequested, 'e': TimelineEnded}

// TimelineEntry is one step of a task's life.
type TimelineEntry struct {
	// Kind is one of the Timeline* constants.
	Kind string `json:"kind"`
	// At is when it happened.
	At time.Time `json:"at"`
	// Attempt is the delivery it concerns (started, lost); 0 otherwise.
	Attempt int64 `json:"attempt,omitempty"`
	// Worker names the worker that claimed the attempt (started).
	Worker string `json:"worker,omitempty"`
	// Detail is the request or answer keys (input_requested, answered) or
	// the final status (ended).
	Detail string `json:"detail,omitempty"`
}

// parseTimeline decodes the record's field 'tl': entries
// '<kind><ms after createdAt>[:<detail>];' (scripts/timeline.lua). An
// entry it cannot read is skipped, so a record written by a newer
// version still shows the rest.
func parseTimeline(created time.Time, tl string) []TimelineEntry {
	if tl == "" {
		return nil
	}
	out := make([]TimelineEntry, 0, strings.Count(tl, ";"))
	for _, raw := range strings.Split(strings.TrimSuffix(tl, ";"), ";") {
		if len(raw) < 2 {
			continue
		}
		kind, ok := timelineKinds[raw[0]]
		if !ok {
			continue
		}
		offset, detail, _ := strings.Cut(raw[1:], ":")
		ms, err := strconv.ParseInt(offset, 10, 64)
		if err != nil {
			continue
		}
		e := TimelineEntry{Kind: kind, At: created.Add(time.Duration(ms) * time.Millisecond)}
		switch kind {
		case TimelineStarted:
			n, worker, _ := strings.Cut(detail, "@")
			e.Attempt, e.Worker = parseInt(n), worker
		case TimelineLost:
			e.Attempt = parseInt(detail)
		default:
			e.Detail = detail
		}
		out = append(out, e)
	}
	return out
}

// Attempt is one delivery of a task as its timeline tells it.
type Attempt struct {
	// Attempt is the delivery's number.
	Attempt int64 `json:"attempt"`
	// Worker names the worker that ran it.
	Worker string `json:"worker,omitempty"`
	// StartedAt is when it claimed the task.
	StartedAt time.Time `json:"startedAt"`
	// EndedAt is when it stopped; zero while it runs.
	EndedAt time.Time `json:"endedAt,omitzero"`
	// Ended says why it stopped: "lost" (its worker went silent; the
	// task was taken over), "input_requested" (the task parked for
	// input), "completed", "failed" or "cancelled"; empty while it runs.
	Ended string `json:"ended,omitempty"`
}

// Attempts folds the timeline into its deliveries, oldest first: each
// started entry opens one, and the next lost, input request or end closes it.
func Attempts(tl []TimelineEntry) []Attempt {
	var out []Attempt
	open := -1
	for _, e := range tl {
		switch e.Kind {
		case TimelineStarted:
			out = append(out, Attempt{Attempt: e.Attempt, Worker: e.Worker, StartedAt: e.At})
			open = len(out) - 1
		case TimelineLost, TimelineAsked, TimelineEnded:
			if open < 0 {
				continue
			}
			out[open].EndedAt, out[open].Ended = e.At, e.Kind
			if e.Kind == TimelineEnded {
				out[open].Ended = e.Detail
			}
			open = -1
		}
	}
	return out
}
