package taskstate_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/taskstate/timeline"
)

// longTask makes a task whose record holds long values everywhere a
// record can: principal, tool, arguments, caps, checkpoint, input requests
// and answers (keys and values), a reservation (so a receipt on its end);
// it has been answered and claimed again, with a TTL extended once. It
// returns the task and its current attempt.
func (e *env) longTask(t *testing.T) (taskstate.Ref, int64) {
	t.Helper()
	who := "principal-" + strings.Repeat("p", 70)
	if _, err := e.s.Accounts().Credit(ctx(t), who, 1000); err != nil {
		t.Fatal(err)
	}
	reserve := int64(100)
	ref := e.create(t, taskstate.CreateParams{Principal: who, Tool: "tool-" + strings.Repeat("t", 70),
		Arguments: json.RawMessage(`{"a":"` + strings.Repeat("x", 500) + `"}`), TTLMs: ttl(60_000),
		PollIntervalMs: 500, StatusMessage: "Queued", Reserve: &reserve,
		Capabilities: json.RawMessage(`{"elicitation":{"form":{},"url":{}},"sampling":{"tools":{}},"roots":{"listChanged":true}}`)})
	attempt := e.claim(t, ref)
	if err := e.s.SaveCheckpoint(ctx(t), ref, attempt, json.RawMessage(`{"step":"`+strings.Repeat("c", 100)+`"}`)); err != nil {
		t.Fatal(err)
	}
	longKey := "confirm-" + strings.Repeat("k", 70)
	reqs := map[string]json.RawMessage{
		"ok":    json.RawMessage(`{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object"}}}`),
		longKey: json.RawMessage(`{"method":"elicitation/create","params":{"message":"` + strings.Repeat("m", 200) + `"}}`),
	}
	if err := e.s.RequestInput(ctx(t), ref, attempt, reqs); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Answer(ctx(t), ref, map[string]json.RawMessage{"ok": json.RawMessage(`{"action":"accept"}`),
		longKey: json.RawMessage(`{"action":"accept","content":{"why":"` + strings.Repeat("w", 100) + `"}}`)}); err != nil {
		t.Fatal(err)
	}
	attempt = e.claim(t, ref)
	if err := e.s.SetTTL(ctx(t), ref, attempt, 120*time.Second); err != nil {
		t.Fatal(err)
	}
	return ref, attempt
}

// TestEndedRecordCompact ends a task whose record holds long values in each
// way a task ends and checks that it reads back exactly as it did before
// the record was rebuilt: every field the end leaves (the answers, the
// long principal and tool, the receipt) and the ones it writes (a 10 kB
// result, an error, a long statusMessage), in Get and in ListTasks; that
// the companion carries the record's expiry (the extended one) and that
// the reaper deletes both; and, on redis-server, that the record is a
// listpack again under the default hash-max-listpack-value.
func TestEndedRecordCompact(t *testing.T) {
	t.Parallel()
	result := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("r", 10_000) + `"}]}`)
	message := "Done: " + strings.Repeat("s", 100)
	cases := []struct {
		name string
		end  func(t *testing.T, e *env, ref taskstate.Ref, attempt int64) error
		// want changes the record read just before the end into the one
		// expected after it.
		want func(r *taskstate.Record)
	}{
		{
			name: "completed",
			end: func(t *testing.T, e *env, ref taskstate.Ref, attempt int64) error {
				return e.s.Finish(ctx(t), ref, attempt, taskstate.Outcome{Status: proto.StatusCompleted,
					Result: result, StatusMessage: message})
			},
			want: func(r *taskstate.Record) {
				r.Status, r.StatusMessage, r.Result = proto.StatusCompleted, message, result
			},
		},
		{
			name: "failed",
			end: func(t *testing.T, e *env, ref taskstate.Ref, attempt int64) error {
				return e.s.Finish(ctx(t), ref, attempt, taskstate.Outcome{Status: proto.StatusFailed,
					Error: &proto.Error{Code: -32603, Message: "Internal error: " + strings.Repeat("e", 100)}, StatusMessage: message})
			},
			want: func(r *taskstate.Record) {
				r.Status, r.StatusMessage = proto.StatusFailed, message
				r.Error = &proto.Error{Code: -32603, Message: "Internal error: " + strings.Repeat("e", 100)}
			},
		},
		{
			name: "cancelled by its worker after a cancel request",
			end: func(t *testing.T, e *env, ref taskstate.Ref, attempt int64) error {
				if err := e.s.RequestCancel(ctx(t), ref); err != nil {
					return err
				}
				err := e.s.Finish(ctx(t), ref, attempt, taskstate.Outcome{Status: proto.StatusCompleted, Result: result})
				if !errors.Is(err, taskstate.ErrCancelled) {
					return fmt.Errorf("Finish after a cancel: %v", err)
				}
				return nil
			},
			want: func(r *taskstate.Record) {
				r.Status, r.StatusMessage, r.CancelRequested = proto.StatusCancelled, "Cancelled", true
			},
		},
		{
			name: "cancelled while parked for input",
			end: func(t *testing.T, e *env, ref taskstate.Ref, attempt int64) error {
				reqs := map[string]json.RawMessage{"again-" + strings.Repeat("a", 70): json.RawMessage(`{"method":"elicitation/create"}`)}
				if err := e.s.RequestInput(ctx(t), ref, attempt, reqs); err != nil {
					return err
				}
				return e.s.RequestCancel(ctx(t), ref) // ends it at once: no worker holds it
			},
			want: func(r *taskstate.Record) {
				r.Status, r.StatusMessage, r.CancelRequested = proto.StatusCancelled, "Cancelled", true
				r.InputRequests = map[string]json.RawMessage{"again-" + strings.Repeat("a", 70): json.RawMessage(`{"method":"elicitation/create"}`)}
			},
		},
	}
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				// Keys of its own: a case's Reap counts only its task.
				own := *b
				own.Prefix = b.Prefix + tc.name + ":"
				e := newEnv(t, &own)
				freezeMini(b)
				ref, attempt := e.longTask(t)
				want := e.get(t, ref)
				e.clock.Advance(time.Second)
				if err := tc.end(t, e, ref, attempt); err != nil {
					t.Fatal(err)
				}
				got := e.get(t, ref)
				// What every end changes: the time, the state count, the
				// run's fields (prelude ended()) and the settled receipt.
				tc.want(want)
				want.LastUpdatedAt = e.clock.Now()
				want.Arguments, want.Capabilities, want.Checkpoint = nil, json.RawMessage("{}"), nil
				want.Running, want.Heartbeat = 0, time.Time{}
				if got.Version <= want.Version || got.Receipt == nil {
					t.Fatalf("version %d after %d, receipt %s", got.Version, want.Version, got.Receipt)
				}
				want.Version, want.Receipt = got.Version, got.Receipt
				// Every end adds to the timeline (timeline_test.go checks what).
				if gt, wt := got.Timeline(), want.Timeline(); len(gt) <= len(wt) || !reflect.DeepEqual(gt[:len(wt)], wt) ||
					gt[len(gt)-1].Kind != timeline.Ended {
					t.Fatalf("timeline %+v after %+v", gt, wt)
				}
				taskstate.CopyTimeline(want, got)
				// The settled cost joins the reservation create.lua wrote.
				if got.Cost == nil || want.Cost == nil || got.Cost.Reserved != want.Cost.Reserved ||
					got.Cost.Charged+got.Cost.Released != got.Cost.Reserved {
					t.Fatalf("cost %+v after %+v", got.Cost, want.Cost)
				}
				want.Cost = got.Cost
				if want.Result != nil {
					var m map[string]any
					if json.Unmarshal(got.Result, &m) != nil || len(got.Result) < len(result) {
						t.Fatalf("result %.200s", got.Result)
					}
					want.Result = got.Result // the receipt is in its _meta (store_test.go checks how)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("after the end\n got %+v\nwant %+v", got, want)
				}
				if got.Answers["ok"] == nil || len(got.Answers) != 2 || got.Principal != "principal-"+strings.Repeat("p", 70) {
					t.Fatalf("answers %v, principal %q", got.Answers, got.Principal)
				}

				// ListTasks shows the record the same (its long statusMessage
				// included).
				page, err := e.s.ListTasks(ctx(t), got.Principal, taskstate.ListOptions{})
				if err != nil || len(page.Tasks) == 0 || !reflect.DeepEqual(page.Tasks[0].Task(), got.Task()) {
					t.Fatalf("ListTasks: %v %+v, want first %+v", err, page, got.Task())
				}

				// The companion lives as long as the record: the deadline
				// set by SetTTL plus the expiry grace.
				key, extra := e.s.Keys().Task(ref), e.s.Keys().TaskExtra(ref)
				if b.Mini != nil {
					if b.Mini.TTL(key) <= 0 || b.Mini.TTL(extra) != b.Mini.TTL(key) {
						t.Fatalf("TTL record %v, companion %v", b.Mini.TTL(key), b.Mini.TTL(extra))
					}
				} else {
					deadline := got.CreatedAt.Add(120*time.Second + time.Minute).UnixMilli()
					for _, k := range []string{key, extra} {
						at, err := b.Client.Do(ctx(t), "PEXPIRETIME", k).Int64()
						if err != nil || at != deadline {
							t.Fatalf("PEXPIRETIME %s = %d (%v), want %d", k, at, err, deadline)
						}
					}
					enc, err := b.Client.ObjectEncoding(ctx(t), key).Result()
					if err != nil || enc != "listpack" {
						t.Fatalf("OBJECT ENCODING of the ended record = %q (%v), want listpack", enc, err)
					}
				}

				// Expired: gone for readers, and the reaper deletes both keys.
				e.clock.Advance(121 * time.Second)
				if _, err := e.s.Get(ctx(t), ref); !errors.Is(err, taskstate.ErrNotFound) {
					t.Fatalf("Get after the deadline: %v", err)
				}
				if n, err := e.s.Reap(ctx(t), nil); err != nil || n != 1 {
					t.Fatalf("Reap = %d, %v", n, err)
				}
				if n := b.Client.Exists(ctx(t), key, extra).Val(); n != 0 {
					t.Fatalf("%d of the record and its companion left after the reap", n)
				}
			})
		}
	})
}

// TestEndedRecordShort: a task that ended with only short values gets no
// companion, and its record reads back the same.
func TestEndedRecordShort(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		ref := e.create(t, taskstate.CreateParams{TTLMs: ttl(60_000)})
		attempt := e.claim(t, ref)
		if err := e.s.Finish(ctx(t), ref, attempt, taskstate.Outcome{Status: proto.StatusCompleted,
			Result: json.RawMessage(`{"content":[]}`), StatusMessage: "Done"}); err != nil {
			t.Fatal(err)
		}
		if got := e.get(t, ref); got.Status != proto.StatusCompleted || string(got.Result) != `{"content":[]}` || got.StatusMessage != "Done" {
			t.Fatalf("Get = %+v", got)
		}
		if n := b.Client.Exists(ctx(t), e.s.Keys().TaskExtra(ref)).Val(); n != 0 {
			t.Fatal("a companion for a record without long values")
		}
		if _, ok := e.raw(t, ref)["x"]; ok {
			t.Fatal("the record says it has a companion")
		}
	})
}

// TestEndedRecordManyInputs: a record with more input fields than a
// compact hash may hold (hash-max-listpack-entries, 512) is compact once
// its task ended, and its input requests read back whole.
func TestEndedRecordManyInputs(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		ref := e.create(t, taskstate.CreateParams{TTLMs: ttl(60_000)})
		attempt := e.claim(t, ref)
		reqs := map[string]json.RawMessage{}
		for i := range 600 {
			reqs[fmt.Sprintf("q%d", i)] = json.RawMessage(`{"method":"elicitation/create"}`)
		}
		if err := e.s.RequestInput(ctx(t), ref, attempt, reqs); err != nil {
			t.Fatal(err)
		}
		if err := e.s.RequestCancel(ctx(t), ref); err != nil {
			t.Fatal(err)
		}
		got := e.get(t, ref)
		if got.Status != proto.StatusCancelled || !reflect.DeepEqual(got.InputRequests, reqs) {
			t.Fatalf("status %s, %d input requests", got.Status, len(got.InputRequests))
		}
		if b.Mini == nil {
			enc, err := b.Client.ObjectEncoding(ctx(t), e.s.Keys().Task(ref)).Result()
			if err != nil || enc != "listpack" {
				t.Fatalf("OBJECT ENCODING = %q (%v), want listpack", enc, err)
			}
		}
	})
}

// TestCompactRecordLongResult: a task whose record was compact when it
// finished with a long result (the common case: short arguments, a long
// answer) has the result written straight to the companion and its record
// kept compact, and reads back the same; with a reservation, the receipt
// written at the same end is long too, and the rebuild that follows keeps
// the result the finish put in the companion; so does a long final
// statusMessage.
func TestCompactRecordLongResult(t *testing.T) {
	t.Parallel()
	result := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("r", 300) + `"}]}`)
	for _, c := range []struct {
		priced  bool
		message string // the final statusMessage; a long one cannot stay in the record
	}{{false, "Done"}, {true, "Done"}, {false, "Done: " + strings.Repeat("m", 80)}} {
		priced := c.priced
		t.Run(fmt.Sprintf("priced=%v/message=%d", priced, len(c.message)), func(t *testing.T) {
			t.Parallel()
			redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
				e := newEnv(t, b)
				freezeMini(b)
				p := taskstate.CreateParams{TTLMs: ttl(60_000)}
				if priced {
					if _, err := e.s.Accounts().Credit(ctx(t), "anonymous", 10); err != nil {
						t.Fatal(err)
					}
					reserve := int64(5)
					p.Principal, p.Reserve = "anonymous", &reserve
				}
				ref := e.create(t, p)
				attempt := e.claim(t, ref)
				if err := e.s.Finish(ctx(t), ref, attempt, taskstate.Outcome{Status: proto.StatusCompleted,
					Result: result, StatusMessage: c.message}); err != nil {
					t.Fatal(err)
				}
				got := e.get(t, ref)
				// With a reservation the result carries the receipt in its
				// _meta (store_test.go checks how).
				if got.Status != proto.StatusCompleted || got.StatusMessage != c.message ||
					(!priced && string(got.Result) != string(result)) || !strings.Contains(string(got.Result), strings.Repeat("r", 300)) {
					t.Fatalf("Get = %v %q %.80s", got.Status, got.StatusMessage, got.Result)
				}
				if priced && !strings.Contains(string(got.Receipt), `"reserved":5`) {
					t.Fatalf("receipt = %+v, want the reservation of 5", got.Receipt)
				}
				key, extra := e.s.Keys().Task(ref), e.s.Keys().TaskExtra(ref)
				if b.Client.HExists(ctx(t), key, "result").Val() || !b.Client.HExists(ctx(t), key, "x").Val() {
					t.Fatal("the long result stayed in the record, or the record names no companion")
				}
				if b.Mini == nil {
					if enc, err := b.Client.ObjectEncoding(ctx(t), key).Result(); err != nil || enc != "listpack" {
						t.Fatalf("OBJECT ENCODING = %q (%v), want listpack", enc, err)
					}
					rec, err1 := b.Client.Do(ctx(t), "PEXPIRETIME", key).Int64()
					x, err2 := b.Client.Do(ctx(t), "PEXPIRETIME", extra).Int64()
					if err1 != nil || err2 != nil || rec <= 0 || x != rec {
						t.Fatalf("PEXPIRETIME of the record %d (%v) and of its companion %d (%v)", rec, err1, x, err2)
					}
				} else if b.Mini.TTL(key) <= 0 || b.Mini.TTL(extra) != b.Mini.TTL(key) {
					t.Fatalf("TTL record %v, companion %v", b.Mini.TTL(key), b.Mini.TTL(extra))
				}
			})
		})
	}
}

// freezeMini stops a miniredis backend's clock where it is: the scripts
// write absolute expiries (PEXPIREAT, SET PXAT), which miniredis turns into
// durations at its own reading of the clock, so two keys given the same
// expiry a moment apart would otherwise differ by that moment.
func freezeMini(b *redistest.Backend) {
	if b.Mini != nil {
		b.Mini.SetTime(time.Now())
	}
}
