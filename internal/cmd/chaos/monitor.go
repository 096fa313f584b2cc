package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpq/mcpq/internal/toolpack/chaos"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate/events"
)

// The observer reads Redis's MONITOR feed: every command Redis executes, in
// the order it executes them, including the commands Lua scripts run
// ("[0 lua]" lines). A script that refuses a write (a stale attempt, a
// terminal task) runs no HSET, so every HSET and PUBLISH a script runs on a
// task is an accepted write. That is what the invariants are checked on:
// not on what processes say they did, but on what Redis did.

// claim is a new attempt taking a task, as Redis ran it.
type claim struct {
	attempt int64
	at      time.Time
}

// ending is a terminal status published on a task's events channel.
type ending struct {
	status string
	at     time.Time
}

// obs is what the monitor saw of one task.
type obs struct {
	attempt   int64          // highest attempt claimed or seen writing
	claims    []claim        // in order
	pid       map[int64]int  // attempt -> worker pid, from its tags
	writes    []time.Time    // worker writes (heartbeat or ending), in order
	endings   []ending       // terminal statuses published, in order
	cancelReq time.Time      // first cancel request (flag set or cancelled at once)
	overlaps  []string       // accepted writes of an attempt older than a newer one's
	tagged    map[int64]bool // attempts seen writing a tag or checkpoint
	fences    []time.Time    // takeovers: the take-back script's HINCRBY lost
	starts    []time.Time    // claims: every HSET running of a delivery (claim.lua)
}

// observer keeps what the monitor saw, by task id.
type observer struct {
	prefix string

	mu      sync.Mutex
	tasks   map[string]*obs
	lines   int64
	scripts int64 // client script calls (EVAL, EVALSHA, FCALL) seen since attach
	infoAt  chan int64
	gaps    []string // reasons the feed may have missed commands
}

func newObserver(prefix string) *observer {
	return &observer{prefix: prefix, tasks: map[string]*obs{}, infoAt: make(chan int64, 4)}
}

func (o *observer) task(id string) *obs {
	t := o.tasks[id]
	if t == nil {
		t = &obs{pid: map[int64]int{}, tagged: map[int64]bool{}}
		o.tasks[id] = t
	}
	return t
}

// line handles one MONITOR line (without the leading "+" and the CRLF).
func (o *observer) line(s string) error {
	ts, rest, ok := strings.Cut(s, " ")
	if !ok {
		return fmt.Errorf("monitor line without a timestamp: %q", s)
	}
	secs, err := strconv.ParseFloat(ts, 64)
	if err != nil {
		return fmt.Errorf("monitor timestamp %q: %w", ts, err)
	}
	at := time.UnixMicro(int64(secs*1e6 + 0.5))
	if !strings.HasPrefix(rest, "[") {
		return fmt.Errorf("monitor line without a source: %q", s)
	}
	src, argText, ok := strings.Cut(rest[1:], "] ")
	if !ok {
		return fmt.Errorf("monitor line without a source: %q", s)
	}
	args, err := splitArgs(argText)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fmt.Errorf("monitor line without a command: %q", s)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines++
	cmd := strings.ToUpper(args[0])
	if !strings.HasSuffix(src, " lua") {
		switch cmd {
		case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
			o.scripts++
		case "INFO":
			if len(args) == 2 && strings.EqualFold(args[1], "commandstats") {
				select {
				case o.infoAt <- o.scripts:
				default:
				}
			}
		}
		return nil
	}
	switch {
	case cmd == "HSET" && len(args) >= 4:
		if id, ok := o.id(args[1], ":task:"); ok {
			o.hset(o.task(id), args[2:], at)
		}
	case cmd == "HINCRBY" && len(args) == 4 && args[2] == "lost":
		if id, ok := o.id(args[1], ":task:"); ok {
			t := o.task(id)
			t.fences = append(t.fences, at)
		}
	case cmd == "HINCRBY" && len(args) == 4 && args[2] == "attempt":
		if id, ok := o.id(args[1], ":task:"); ok {
			t := o.task(id)
			t.claim(t.attempt+1, at)
		}
	case cmd == "PUBLISH" && len(args) == 3:
		if id, ok := o.id(args[1], ":events:"); ok {
			t := o.task(id)
			ev := events.Decode(args[2])
			switch {
			case ev.Status.Terminal():
				t.endings = append(t.endings, ending{string(ev.Status), at})
				t.writes = append(t.writes, at)
				if ev.Status == proto.StatusCancelled && t.cancelReq.IsZero() {
					t.cancelReq = at
				}
			case ev.CancelRequested:
				if t.cancelReq.IsZero() {
					t.cancelReq = at
				}
			}
		}
	}
	return nil
}

// id returns the task id of a key or channel of this run's prefix whose
// name has kind (":task:" or ":events:") before the id.
func (o *observer) id(name, kind string) (string, bool) {
	if !strings.HasPrefix(name, o.prefix) {
		return "", false
	}
	i := strings.LastIndex(name, kind)
	if i < 0 {
		return "", false
	}
	return name[i+len(kind):], true
}

// hset handles a script's HSET on a task record: field/value pairs.
func (o *observer) hset(t *obs, kv []string, at time.Time) {
	worker := false
	for i := 0; i+1 < len(kv); i += 2 {
		f, v := kv[i], kv[i+1]
		switch f {
		case "running":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
				t.claim(n, at)
				t.starts = append(t.starts, at)
			}
		case "statusMessage":
			if a, pid, ok := chaos.ParseTag(v); ok {
				t.wrote(a, at)
				if _, seen := t.pid[a]; !seen {
					t.pid[a] = pid
				}
			}
		case "checkpoint":
			if a, ok := chaos.CheckpointAttempt(v); ok {
				t.wrote(a, at)
			}
		case "cancel":
			if v == "1" && t.cancelReq.IsZero() {
				t.cancelReq = at
			}
		case "heartbeat":
			worker = true
		}
	}
	if worker {
		t.writes = append(t.writes, at)
	}
}

// claim records attempt n taking the task (a repeat of the current one,
// as claim's HSET after its HINCRBY, changes nothing).
func (t *obs) claim(n int64, at time.Time) {
	if n > t.attempt {
		t.attempt = n
		t.claims = append(t.claims, claim{n, at})
	}
}

// wrote records an accepted write that names attempt a. An attempt older
// than the newest one claimed or seen writing is an overlap: Redis accepted
// a write from a delivery after a newer delivery had taken the task.
func (t *obs) wrote(a int64, at time.Time) {
	t.tagged[a] = true
	switch {
	case a < t.attempt:
		t.overlaps = append(t.overlaps, fmt.Sprintf("attempt %d wrote at %s after attempt %d took the task",
			a, at.Format("15:04:05.000"), t.attempt))
	case a > t.attempt: // its claim was not seen: count the write as the claim
		t.claim(a, at)
	}
}

// splitArgs splits MONITOR's quoted arguments ("a" "b \"c\"" "\x00").
func splitArgs(s string) ([]string, error) {
	var out []string
	for i := 0; i < len(s); {
		if s[i] == ' ' {
			i++
			continue
		}
		if s[i] != '"' {
			return nil, fmt.Errorf("monitor argument not quoted at %d: %q", i, s)
		}
		var b strings.Builder
		i++
		closed := false
		for i < len(s) && !closed {
			c := s[i]
			switch {
			case c == '"':
				closed = true
				i++
			case c == '\\' && i+1 < len(s):
				e := s[i+1]
				i += 2
				switch e {
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				case 't':
					b.WriteByte('\t')
				case 'a':
					b.WriteByte('\a')
				case 'b':
					b.WriteByte('\b')
				case 'x':
					if i+2 > len(s) {
						return nil, fmt.Errorf("monitor argument: short \\x escape in %q", s)
					}
					n, err := strconv.ParseUint(s[i:i+2], 16, 8)
					if err != nil {
						return nil, fmt.Errorf("monitor argument: bad \\x escape in %q", s)
					}
					b.WriteByte(byte(n))
					i += 2
				default:
					b.WriteByte(e)
				}
			default:
				b.WriteByte(c)
				i++
			}
		}
		if !closed {
			return nil, fmt.Errorf("monitor argument not closed: %q", s)
		}
		out = append(out, b.String())
	}
	return out, nil
}

// attach opens a MONITOR connection to addr and feeds o from it until the
// connection ends; done is closed then, with the reason in *endErr.
func (o *observer) attach(addr string) (done <-chan struct{}, endErr *error, err error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, nil, err
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		conn.Close()
		return nil, nil, err
	}
	r := bufio.NewReaderSize(conn, 1<<20)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	first, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(first) != "+OK" {
		conn.Close()
		return nil, nil, fmt.Errorf("MONITOR answered %q: %v", strings.TrimSpace(first), err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	o.mu.Lock()
	o.scripts = 0
	o.mu.Unlock()
	for len(o.infoAt) > 0 { // a mark from an earlier connection
		<-o.infoAt
	}
	ch := make(chan struct{})
	var reason error
	go func() {
		defer close(ch)
		defer conn.Close()
		for {
			s, err := r.ReadString('\n')
			if err != nil {
				reason = err
				return
			}
			s = strings.TrimRight(s, "\r\n")
			if !strings.HasPrefix(s, "+") {
				reason = fmt.Errorf("monitor: unexpected line %q", s)
				return
			}
			if err := o.line(s[1:]); err != nil {
				reason = err
				return
			}
		}
	}()
	return ch, &reason, nil
}

// scriptsBeforeInfo waits for the monitor to pass the INFO commandstats the
// caller sent and returns how many script calls it had seen by then.
func (o *observer) scriptsBeforeInfo(timeout time.Duration) (int64, error) {
	select {
	case n := <-o.infoAt:
		return n, nil
	case <-time.After(timeout):
		return 0, errors.New("the monitor did not show INFO commandstats")
	}
}

// gap records a reason the feed may have missed commands.
func (o *observer) gap(reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gaps = append(o.gaps, reason)
}
