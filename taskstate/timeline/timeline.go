// Package timeline reads a task's timeline: what happened to it from
// creation to end (each attempt with its worker, questions and answers,
// takeovers, the end), which the task scripts write into the record's
// field 'tl' as compact text (taskstate/scripts/timeline.lua).
package timeline

import (
	"strconv"
	"strings"
	"time"
)

// Entry kinds (Entry.Kind), as taskstate/scripts/timeline.lua
// writes them into the record's field 'tl'.
const (
	// Started: a delivery claimed the task (Attempt, Worker).
	Started = "started"
	// Asked: the task asked for input (Detail: the request keys).
	Asked = "input_requested"
	// Answered: answers arrived (Detail: their keys).
	Answered = "answered"
	// Lost: the attempt's worker went silent and the task was
	// taken back (Attempt: the lost one).
	Lost = "lost"
	// CancelRequested: a cancel was requested while the task ran.
	CancelRequested = "cancel_requested"
	// Ended: the task ended (Detail: its final status).
	Ended = "ended"
)

// kinds maps the one-letter kinds of the record's text to names.
var kinds = map[byte]string{'s': Started, 'q': Asked, 'a': Answered,
	'l': Lost, 'x': CancelRequested, 'e': Ended}

// Entry is one step of a task's life.
type Entry struct {
	// Kind is one of the kind constants (Started ...).
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

// Parse decodes the record's field 'tl' of a task created at created:
// entries '<kind><ms after createdAt>[:<detail>];'. An
// entry it cannot read is skipped, so a record written by a newer
// version still shows the rest.
func Parse(created time.Time, tl string) []Entry {
	if tl == "" {
		return nil
	}
	out := make([]Entry, 0, strings.Count(tl, ";"))
	for _, raw := range strings.Split(strings.TrimSuffix(tl, ";"), ";") {
		if len(raw) < 2 {
			continue
		}
		kind, ok := kinds[raw[0]]
		if !ok {
			continue
		}
		offset, detail, _ := strings.Cut(raw[1:], ":")
		ms, err := strconv.ParseInt(offset, 10, 64)
		if err != nil {
			continue
		}
		e := Entry{Kind: kind, At: created.Add(time.Duration(ms) * time.Millisecond)}
		switch kind {
		case Started:
			n, worker, _ := strings.Cut(detail, "@")
			e.Attempt, e.Worker = atoi(n), worker
		case Lost:
			e.Attempt = atoi(detail)
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
func Attempts(tl []Entry) []Attempt {
	var out []Attempt
	open := -1
	for _, e := range tl {
		switch e.Kind {
		case Started:
			out = append(out, Attempt{Attempt: e.Attempt, Worker: e.Worker, StartedAt: e.At})
			open = len(out) - 1
		case Lost, Asked, Ended:
			if open < 0 {
				continue
			}
			out[open].EndedAt, out[open].Ended = e.At, e.Kind
			if e.Kind == Ended {
				out[open].Ended = e.Detail
			}
			open = -1
		}
	}
	return out
}

// atoi reads a decimal number, 0 when it is not one.
func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
