package frontend

import (
	"log/slog"
	"sync"
	"time"
)

// noteInterval is how often one kind of warning is logged while it keeps
// happening: a Redis outage or a full Redis fails every request, and a
// line per request would flood the log (issue 25, item 5).
const noteInterval = 10 * time.Second

// logNotes logs each warning message at most once per noteInterval,
// saying how many it left out since the last line.
type logNotes struct {
	mu   sync.Mutex
	seen map[string]*noteState
}

type noteState struct {
	last    time.Time
	dropped int
}

// warn logs msg with args at Warn unless msg was logged less than
// noteInterval ago; then it only counts it.
func (n *logNotes) warn(log *slog.Logger, msg string, args ...any) {
	now := time.Now()
	n.mu.Lock()
	if n.seen == nil {
		n.seen = map[string]*noteState{}
	}
	st := n.seen[msg]
	if st == nil {
		st = &noteState{}
		n.seen[msg] = st
	}
	if !st.last.IsZero() && now.Sub(st.last) < noteInterval {
		st.dropped++
		n.mu.Unlock()
		return
	}
	dropped := st.dropped
	st.last, st.dropped = now, 0
	n.mu.Unlock()
	if dropped > 0 {
		args = append(args, "sameSinceLastLine", dropped)
	}
	log.Warn(msg, args...)
}
