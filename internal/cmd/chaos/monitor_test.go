package main

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/toolpack/chaos"
)

func TestSplitArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want []string
		err  string
	}{
		{`"HSET" "k" "statusMessage" "a \"q\" b"`, []string{"HSET", "k", "statusMessage", `a "q" b`}, ""},
		{`"x\\y" "\n\r\t" "\x00\xff"`, []string{`x\y`, "\n\r\t", "\x00\xff"}, ""},
		{`""`, []string{""}, ""},
		{`"open`, nil, "not closed"},
		{`bare`, nil, "not quoted"},
		{`"\x4"`, nil, "escape"},
		{`"\xzz"`, nil, "bad \\x escape"},
	} {
		got, err := splitArgs(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("splitArgs(%q) error %v, want one with %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// feed builds MONITOR lines for the observer at increasing times.
type feed struct {
	t   *testing.T
	o   *observer
	sec float64
}

func (f *feed) lua(args ...string) { f.line("0 lua", args...) }

func (f *feed) client(args ...string) { f.line("0 127.0.0.1:5000", args...) }

func (f *feed) line(src string, args ...string) {
	f.t.Helper()
	f.sec += 0.5
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	if err := f.o.line(fmt.Sprintf("%.6f [%s] %s", 1700000000+f.sec, src, strings.Join(q, " "))); err != nil {
		f.t.Fatalf("line: %v", err)
	}
}

const (
	key = "chaos1:{pabc}:task:T1"
	ch  = "chaos1:{pabc}:events:T1"
)

// claimLines are what claim.lua runs for attempt n.
func (f *feed) claim(n int) {
	f.lua("HINCRBY", key, "attempt", "1")
	f.lua("HSET", key, "heartbeat", "1", "statusMessage", fmt.Sprintf("Running (attempt %d)", n), "running", fmt.Sprint(n))
	f.lua("PUBLISH", ch, "working")
}

func (f *feed) progress(a, pid int) {
	f.lua("HSET", key, "statusMessage", chaos.Tag(int64(a), 1, 5, pid), "lastUpdatedAt", "1", "heartbeat", "1")
}

// TestObserver replays script writes and checks what the observer keeps:
// claims, the pid of each attempt, overlaps, endings and cancel requests.
func TestObserver(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		run      func(f *feed)
		attempt  int64
		claims   int
		overlaps int
		endings  []string
		cancel   bool
	}{
		{"one attempt", func(f *feed) {
			f.claim(1)
			f.progress(1, 10)
			f.lua("HSET", key, "status", "completed", "statusMessage", "done")
			f.lua("PUBLISH", ch, "completed")
		}, 1, 1, 0, []string{"completed"}, false},
		{"takeover, old attempt fenced", func(f *feed) {
			f.claim(1)
			f.progress(1, 10)
			f.claim(2)
			f.progress(2, 11)
		}, 2, 2, 0, nil, false},
		{"old attempt accepted after the new claim", func(f *feed) {
			f.claim(1)
			f.progress(1, 10)
			f.claim(2)
			f.progress(1, 10)
		}, 2, 2, 1, nil, false},
		{"old attempt's checkpoint accepted after the new one wrote", func(f *feed) {
			f.claim(1)
			f.progress(2, 11) // attempt 2's claim unseen: its write counts as the claim
			f.lua("HSET", key, "checkpoint", `{"a":1,"done":2,"sum":3}`, "heartbeat", "1")
		}, 2, 2, 1, nil, false},
		{"claim without running field", func(f *feed) {
			f.lua("HINCRBY", key, "attempt", "1")
			f.lua("HINCRBY", key, "attempt", "1")
		}, 2, 2, 0, nil, false},
		{"cancel then cancelled, twice ended", func(f *feed) {
			f.claim(1)
			f.lua("HSET", key, "cancel", "1", "statusMessage", "Cancelling")
			f.lua("PUBLISH", ch, "cancel")
			f.lua("PUBLISH", ch, "cancelled")
			f.lua("PUBLISH", ch, "completed")
		}, 1, 1, 0, []string{"cancelled", "completed"}, true},
		{"state events as the scripts publish them", func(f *feed) {
			f.claim(1)
			f.lua("HSET", key, "cancel", "1", "statusMessage", "Cancelling")
			f.lua("PUBLISH", ch, `{"version":3,"status":"working","statusMessage":"Cancelling","lastUpdatedAt":"1","cancel":"1"}`)
			f.lua("PUBLISH", ch, `{"version":4,"status":"cancelled","statusMessage":"Cancelled","lastUpdatedAt":"2","cancel":"1"}`)
		}, 1, 1, 0, []string{"cancelled"}, true},
		{"other prefix and client lines ignored", func(f *feed) {
			f.lua("HSET", "other:{pabc}:task:T1", "running", "5")
			f.client("EVALSHA", "abc", "1", key, "chaos a=9 s=1/5 pid=1")
			f.lua("PUBLISH", "chaos1:lists", "tools")
		}, 0, 0, 0, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := &feed{t: t, o: newObserver("chaos1:")}
			c.run(f)
			o := f.o.task("T1")
			var endings []string
			for _, e := range o.endings {
				endings = append(endings, e.status)
			}
			if o.attempt != c.attempt || len(o.claims) != c.claims || len(o.overlaps) != c.overlaps ||
				!reflect.DeepEqual(endings, c.endings) || o.cancelReq.IsZero() == c.cancel {
				t.Fatalf("attempt %d claims %d overlaps %q endings %q cancel %v; want %d %d %d %q %v",
					o.attempt, len(o.claims), o.overlaps, endings, !o.cancelReq.IsZero(),
					c.attempt, c.claims, c.overlaps, c.endings, c.cancel)
			}
		})
	}
}

func TestObserverPids(t *testing.T) {
	t.Parallel()
	f := &feed{t: t, o: newObserver("chaos1:")}
	f.claim(1)
	f.progress(1, 10)
	f.claim(2)
	f.progress(2, 11)
	f.progress(2, 99) // a pid is the first one seen for the attempt
	o := f.o.task("T1")
	if o.pid[1] != 10 || o.pid[2] != 11 {
		t.Fatalf("pids %v", o.pid)
	}
	if len(o.writes) != 5 { // two claims, three progress writes
		t.Fatalf("writes %d, want 5", len(o.writes))
	}
}

func TestObserverScriptsBeforeInfo(t *testing.T) {
	t.Parallel()
	f := &feed{t: t, o: newObserver("chaos1:")}
	f.client("EVALSHA", "x", "0")
	f.client("eval", "return 1", "0")
	f.client("INFO", "commandstats")
	f.client("EVALSHA", "x", "0")
	n, err := f.o.scriptsBeforeInfo(time.Second)
	if err != nil || n != 2 {
		t.Fatalf("scriptsBeforeInfo = %d, %v; want 2", n, err)
	}
	if _, err := f.o.scriptsBeforeInfo(10 * time.Millisecond); err == nil {
		t.Fatal("a second wait without INFO returned")
	}
}

func TestObserverBadLines(t *testing.T) {
	t.Parallel()
	o := newObserver("chaos1:")
	for _, l := range []string{"", "x [0 lua] \"A\"", "1.0 0 lua \"A\"", "1.0 [0 lua", "1.0 [0 lua] ", "1.0 [0 lua] bare"} {
		if err := o.line(l); err == nil {
			t.Errorf("line(%q) accepted", l)
		}
	}
}

func TestScriptCalls(t *testing.T) {
	t.Parallel()
	info := "# Commandstats\r\ncmdstat_evalsha:calls=7,usec=1,usec_per_call=0.1,rejected_calls=2,failed_calls=0\r\n" +
		"cmdstat_eval:calls=3,usec=1\r\ncmdstat_get:calls=100,usec=1\r\n"
	if n := scriptCalls(info); n != 10 {
		t.Fatalf("scriptCalls = %d, want 10", n)
	}
}
