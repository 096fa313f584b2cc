package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// statusFD is the file descriptor a program writes protocol lines to. A
// descriptor of its own, not a prefix on stdout: stdout stays the program's
// (its result when the output folder is empty, and whatever its libraries
// print), and nothing a library prints can pass for a protocol line.
const statusFD = 3

// maxLine is the longest protocol line (a checkpoint is one line).
const maxLine = 4 << 20

// message is one protocol line: exactly one of a status, a progress report,
// a checkpoint, an input request or a usage report.
type message struct {
	// Status is the new statusMessage ({"status": "..."}).
	Status *string
	// Progress, Total and Text are a progress report ({"progress": 3,
	// "total": 10, "message": "..."}; total and message optional).
	Progress *float64
	Total    float64
	Text     string
	// Checkpoint is the program's checkpoint ({"checkpoint": <JSON>}).
	Checkpoint json.RawMessage
	// Usage is metered usage to add ({"usage": 5}: units, an integer above 0).
	Usage int64
	// Input asks the client for input ({"input": {"key": "approve",
	// "method": "elicitation/create", "params": {...}}}).
	Input *inputLine
}

// inputLine is an input request of the program: the answer is written to
// $MCPQ_INPUT/<key>.json.
type inputLine struct {
	Key    string          `json:"key"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// inputKey is what an input key may be: it names the answer's file.
var inputKey = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$`)

var lineKeys = []string{"status", "progress", "total", "message", "checkpoint", "input", "usage"}

// parseLine decodes one protocol line (without its newline). A blank line
// is no message (ok false, no error).
func parseLine(line []byte) (m message, ok bool, err error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return m, false, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil || fields == nil {
		return m, false, errors.New("not a JSON object")
	}
	kinds := 0
	for k := range fields {
		switch {
		case !slices.Contains(lineKeys, k):
			return m, false, fmt.Errorf("unknown key %q (known: %s)", k, strings.Join(lineKeys, ", "))
		case k == "status" || k == "progress" || k == "checkpoint" || k == "input" || k == "usage":
			kinds++
		}
	}
	if kinds != 1 {
		return m, false, errors.New(`a line holds exactly one of "status", "progress", "checkpoint", "input" and "usage"`)
	}
	if raw, ok := fields["usage"]; ok {
		if len(fields) > 1 {
			return m, false, errors.New(`a "usage" line holds no other key`)
		}
		if err := json.Unmarshal(raw, &m.Usage); err != nil || m.Usage <= 0 {
			return m, false, errors.New(`"usage" is not an integer above 0`)
		}
		return m, true, nil
	}
	if raw, ok := fields["input"]; ok {
		if len(fields) > 1 {
			return m, false, errors.New(`an "input" line holds no other key`)
		}
		var in inputLine
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return m, false, fmt.Errorf(`"input" is not an object of "key", "method" and "params": %v`, err)
		}
		if !inputKey.MatchString(in.Key) {
			return m, false, fmt.Errorf(`"input" key %q is not 1 to 64 of A-Z a-z 0-9 _ - . (not starting with .)`, in.Key)
		}
		if in.Method == "" {
			return m, false, errors.New(`"input" has no "method"`)
		}
		m.Input = &in
		return m, true, nil
	}
	if raw, ok := fields["status"]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return m, false, errors.New(`"status" is not a string`)
		}
		if len(fields) > 1 {
			return m, false, errors.New(`a "status" line holds no other key`)
		}
		m.Status = &s
		return m, true, nil
	}
	if raw, ok := fields["checkpoint"]; ok {
		if len(fields) > 1 {
			return m, false, errors.New(`a "checkpoint" line holds no other key`)
		}
		if string(raw) == "null" {
			return m, false, errors.New(`"checkpoint" is null`)
		}
		m.Checkpoint = raw
		return m, true, nil
	}
	var p float64
	if err := json.Unmarshal(fields["progress"], &p); err != nil || math.IsInf(p, 0) || p < 0 {
		return m, false, errors.New(`"progress" is not a number of at least 0`)
	}
	m.Progress = &p
	if raw, ok := fields["total"]; ok {
		if err := json.Unmarshal(raw, &m.Total); err != nil || m.Total <= 0 {
			return m, false, errors.New(`"total" is not a number above 0`)
		}
	}
	if raw, ok := fields["message"]; ok {
		if err := json.Unmarshal(raw, &m.Text); err != nil {
			return m, false, errors.New(`"message" is not a string`)
		}
	}
	return m, true, nil
}

// statusText is what a progress report shows as statusMessage: its message,
// else "progress/total" (or the progress alone).
func (m message) statusText() string {
	switch {
	case m.Text != "":
		return m.Text
	case m.Total > 0:
		return fmt.Sprintf("%g/%g", *m.Progress, m.Total)
	default:
		return fmt.Sprintf("%g", *m.Progress)
	}
}
