package taskstate_test

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/taskstate"
)

// redisTTL is the key's remaining Redis expiry; 0 when it has none.
func (e *env) redisTTL(t *testing.T, ref taskstate.Ref) time.Duration {
	t.Helper()
	key := e.s.Keys().Task(ref)
	if e.b.Mini != nil {
		return e.b.Mini.TTL(key)
	}
	d, err := e.b.Client.PTTL(ctx(t), key).Result()
	if err != nil {
		t.Fatalf("PTTL: %v", err)
	}
	if d < 0 { // -1: no expiry (-2, missing, is caught by the callers)
		return 0
	}
	return d
}

func TestCreate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		grace  time.Duration
		params taskstate.CreateParams
		// fields are the record's hash fields beyond the ones every record has.
		fields map[string]string
	}{
		{
			name:   "unlimited ttl, defaults",
			params: taskstate.CreateParams{Tool: "echo"},
			fields: map[string]string{"pollIntervalMs": "0", "statusMessage": "", "arguments": "{}",
				"tool": "echo"},
		},
		{
			name: "ttl with default grace",
			params: taskstate.CreateParams{Tool: "render", Arguments: json.RawMessage(`{"frames":3}`),
				TTLMs: ttl(90_000), PollIntervalMs: 2500, StatusMessage: "Queued",
				Capabilities: json.RawMessage(`{"elicitation":{}}`)},
			fields: map[string]string{"ttlMs": "90000", "pollIntervalMs": "2500", "statusMessage": "Queued",
				"arguments": `{"frames":3}`, "tool": "render", "caps": `{"elicitation":{}}`},
		},
		{
			name:   "ttl with custom grace",
			grace:  7 * time.Second,
			params: taskstate.CreateParams{Tool: "echo", TTLMs: ttl(30_000)},
			fields: map[string]string{"ttlMs": "30000", "pollIntervalMs": "0", "statusMessage": "", "arguments": "{}",
				"tool": "echo"},
		},
	}
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnvOpts(t, b, taskstate.Options{ExpiryGrace: tc.grace})
				p := tc.params
				p.Principal = principal
				rec, err := e.s.Create(ctx(t), p)
				if err != nil {
					t.Fatalf("Create: %v", err)
				}
				if !taskstate.ValidID(rec.Ref.ID) || rec.Ref.Owner != taskstate.OwnerTag(principal) {
					t.Fatalf("ref %+v", rec.Ref)
				}
				now := strconv.FormatInt(e.clock.Now().UnixMilli(), 10)
				// Defaults are not written: attempt, running and cancel read as
				// 0, lastUpdatedAt as createdAt, an absent ttlMs as unlimited.
				want := map[string]string{"status": "working", "createdAt": now, "owner": principal}
				maps.Copy(want, tc.fields)
				if got := e.raw(t, rec.Ref); !maps.Equal(got, want) {
					t.Fatalf("record hash\n got %v\nwant %v", got, want)
				}

				got := e.get(t, rec.Ref)
				if got.Status != proto.StatusWorking || got.StatusMessage != p.StatusMessage ||
					!got.CreatedAt.Equal(e.clock.Now()) || !got.LastUpdatedAt.Equal(e.clock.Now()) ||
					got.Principal != principal || got.Tool != p.Tool || got.PollIntervalMs != p.PollIntervalMs ||
					got.Attempt != 0 || got.CancelRequested || !got.Heartbeat.IsZero() {
					t.Fatalf("Get = %+v", got)
				}
				if string(got.Arguments) != string(rec.Arguments) || string(got.Arguments) != tc.fields["arguments"] {
					t.Fatalf("arguments Get %s Create %s", got.Arguments, rec.Arguments)
				}
				wantCaps := cmp.Or(tc.fields["caps"], "{}") // empty capabilities are not stored
				if string(got.Capabilities) != string(rec.Capabilities) || string(got.Capabilities) != wantCaps {
					t.Fatalf("capabilities Get %s Create %s", got.Capabilities, rec.Capabilities)
				}
				if got.InputRequests != nil || got.Answers != nil || got.Checkpoint != nil || got.Resumes != 0 {
					t.Fatalf("new record carries input state: %+v", got)
				}
				task := got.Task()
				if task.TaskID != rec.Ref.ID || task.CreatedAt != taskstate.FormatTime(e.clock.Now()) {
					t.Fatalf("Task() = %+v", task)
				}
				if (task.PollIntervalMs == nil) != (p.PollIntervalMs == 0) {
					t.Fatalf("Task().PollIntervalMs = %v for %d", task.PollIntervalMs, p.PollIntervalMs)
				}

				// The owner's deadline index holds the task at createdAt + ttl.
				score, zerr := b.Client.ZScore(ctx(t), e.s.Keys().Deadlines(rec.Ref.Owner), rec.Ref.ID).Result()
				if p.TTLMs == nil {
					if zerr == nil {
						t.Fatalf("unlimited task is in the deadline index at %v", score)
					}
				} else if want := e.clock.Now().UnixMilli() + *p.TTLMs; zerr != nil || int64(score) != want {
					t.Fatalf("deadline index score %v (%v), want %d", score, zerr, want)
				}

				redisTTL := e.redisTTL(t, rec.Ref)
				if p.TTLMs == nil {
					if got.TTLMs != nil || rec.TTLMs != nil || task.TTLMs != nil {
						t.Fatal("unlimited task shows a ttlMs")
					}
					if !got.Deadline().IsZero() || got.Expired(e.clock.Now().Add(1000*time.Hour)) {
						t.Fatal("unlimited task has a deadline")
					}
					if redisTTL != 0 {
						t.Fatalf("unlimited task has a Redis expiry %v", redisTTL)
					}
					return
				}
				if got.TTLMs == nil || *got.TTLMs != *p.TTLMs || task.TTLMs == nil || *task.TTLMs != *p.TTLMs {
					t.Fatalf("ttlMs %v, want %d", got.TTLMs, *p.TTLMs)
				}
				if want := e.clock.Now().Add(time.Duration(*p.TTLMs) * time.Millisecond); !got.Deadline().Equal(want) {
					t.Fatalf("Deadline %v, want %v", got.Deadline(), want)
				}
				grace := tc.grace
				if grace == 0 {
					grace = time.Minute
				}
				// The expiry is at createdAt + ttl + grace; the backend counts
				// from its own clock, a little later than the fake one.
				wantTTL := time.Duration(*p.TTLMs)*time.Millisecond + grace
				if redisTTL > wantTTL || redisTTL < wantTTL-wait {
					t.Fatalf("Redis TTL %v, want about %v", redisTTL, wantTTL)
				}
			})
		}
	})
}

func TestCreateExists(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		id := taskstate.NewID()
		ref := e.create(t, taskstate.CreateParams{ID: id, Tool: "first", TTLMs: ttl(60_000)})
		if ref.ID != id {
			t.Fatalf("Create used id %q, want %q", ref.ID, id)
		}
		ttlBefore := e.redisTTL(t, ref)
		e.unchanged(t, ref, func() error {
			rec, err := e.s.Create(ctx(t), taskstate.CreateParams{ID: id, Principal: principal, Tool: "second"})
			if rec != nil {
				t.Errorf("Create returned %+v with %v", rec, err)
			}
			return err
		}, taskstate.ErrExists)
		if after := e.redisTTL(t, ref); after == 0 || after > ttlBefore {
			t.Fatalf("Redis TTL went from %v to %v", ttlBefore, after)
		}
		// The same id under another principal is another key.
		other, err := e.s.Create(ctx(t), taskstate.CreateParams{ID: id, Principal: "bob", Tool: "second"})
		if err != nil {
			t.Fatalf("Create for another principal: %v", err)
		}
		if other.Ref == ref || e.get(t, ref).Tool != "first" || e.get(t, other.Ref).Tool != "second" {
			t.Fatalf("principals share a record: %+v %+v", ref, other.Ref)
		}
	})
}

func TestNewID(t *testing.T) {
	t.Parallel()
	const n = 20_000
	seen := make(map[string]bool, n)
	for range n {
		id := taskstate.NewID()
		if len(id) != 23 {
			t.Fatalf("NewID %q has %d chars, want 23", id, len(id))
		}
		raw, err := base64.RawURLEncoding.Strict().DecodeString(id)
		if err != nil || len(raw) != 17 || raw[0]&0x80 != 0 {
			t.Fatalf("NewID %q is not 135 bits of base64url: %v (%d bytes)", id, err, len(raw))
		}
		if c := id[0]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'f') {
			t.Fatalf("NewID %q does not start with a letter", id)
		}
		if !taskstate.ValidID(id) {
			t.Fatalf("ValidID(NewID()) = false for %q", id)
		}
		if seen[id] {
			t.Fatalf("NewID repeated %q after %d ids", id, len(seen))
		}
		seen[id] = true
	}
}

func TestValidID(t *testing.T) {
	t.Parallel()
	good := taskstate.NewID()
	cases := []struct {
		id   string
		want bool
	}{
		{good, true},
		{"AAAAAAAAAAAAAAAAAAAAAAA", true},
		{"fAAAAAAAAAAAAAAAAAAAAAA", true},
		{"gAAAAAAAAAAAAAAAAAAAAAA", false}, // first byte's top bit set
		{"-AAAAAAAAAAAAAAAAAAAAAA", false}, // reads as a flag: NewID never makes it
		{"_AAAAAAAAAAAAAAAAAAAAAA", false},
		{"AAAAAAAAAAAAAAAAAAAAAAB", false}, // non-zero trailing bits
		{"AAAAAAAAAAAAAAAAAAAAAA", true},   // the 16-byte ids made before stay valid
		{"-AAAAAAAAAAAAAAAAAAAAA", true},
		{"abcdefghijklmnopqrst-w", true},    // URL-safe alphabet, canonical last char
		{"abcdefghijklmnopqrst-_", false},   // non-zero trailing bits: NewID never makes it
		{"AAAAAAAAAAAAAAAAAAAAAB", false},   // same
		{"AAAAAAAAAAAAAAAAAAAA\r\n", false}, // CR/LF that lax decoding skips
		{"", false},
		{good[:21], false},
		{good + "A", false},
		{good + good, false},
		{"abcdefghijklmnopqrst+/", false}, // std alphabet, not URL-safe
		{"abcdefghijklmnopqrst==", false},
		{"abcdefghijklmnopqrs t_", false},
		{"abcdefghijklmnopqrs.t_", false},
		{"abcdefghijklmnopqrs:t_", false},
		{"abcdefghijklmnopqrs}t_", false},
		{"abcdefghijklmnopqrstü", false}, // 22 bytes, not base64
		{"../../../../etc/passwd", false},
		{"*", false},
	}
	for _, tc := range cases {
		t.Run(strconv.Quote(tc.id), func(t *testing.T) {
			if got := taskstate.ValidID(tc.id); got != tc.want {
				t.Fatalf("ValidID(%q) = %v, want %v", tc.id, got, tc.want)
			}
		})
	}
}

// countingHook counts the commands a client sends.
type countingHook struct{ n atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func TestGet(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		hook := &countingHook{}
		b.Client.AddHook(hook)
		owner := taskstate.OwnerTag(principal)
		live := e.create(t, taskstate.CreateParams{TTLMs: ttl(10_000)})

		cases := []struct {
			name  string
			ref   taskstate.Ref
			redis bool // whether Redis is asked at all
		}{
			{"unknown id", taskstate.Ref{Owner: owner, ID: taskstate.NewID()}, true},
			{"other owner", taskstate.Ref{Owner: taskstate.OwnerTag("mallory"), ID: live.ID}, true},
			{"empty owner", taskstate.Ref{ID: live.ID}, true},
			{"empty id", taskstate.Ref{Owner: owner}, false},
			{"short id", taskstate.Ref{Owner: owner, ID: live.ID[:10]}, false},
			{"long id", taskstate.Ref{Owner: owner, ID: live.ID + "x"}, false},
			{"key pattern", taskstate.Ref{Owner: owner, ID: "*"}, false},
			{"bad chars", taskstate.Ref{Owner: owner, ID: "abcdefghijklmnopqrst+/"}, false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				before := hook.n.Load()
				r, err := e.s.Get(ctx(t), tc.ref)
				if err != taskstate.ErrNotFound || r != nil {
					t.Fatalf("Get = %v, %v; want nil, ErrNotFound", r, err)
				}
				if asked := hook.n.Load() != before; asked != tc.redis {
					t.Fatalf("Redis asked = %v, want %v", asked, tc.redis)
				}
				if tc.redis {
					return
				}
				before = hook.n.Load()
				if err := e.s.RequestCancel(ctx(t), tc.ref); err != taskstate.ErrNotFound {
					t.Fatalf("RequestCancel = %v, want ErrNotFound", err)
				}
				if hook.n.Load() != before {
					t.Fatal("RequestCancel of a malformed id reached Redis")
				}
			})
		}
	})
}

// TestGetExpired: at createdAt+ttl the store answers exactly as for an id
// that never existed, although Redis still holds the record (grace).
func TestGetExpired(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		ref := e.create(t, taskstate.CreateParams{TTLMs: ttl(10_000)})
		attempt := e.claim(t, ref)
		created := e.clock.Now()

		e.clock.Advance(10_000*time.Millisecond - time.Millisecond)
		r := e.get(t, ref)
		if r.Expired(e.clock.Now()) {
			t.Fatal("expired 1ms before the deadline")
		}
		if err := e.s.Progress(ctx(t), ref, attempt, "last words"); err != nil {
			t.Fatalf("Progress 1ms before the deadline: %v", err)
		}

		e.clock.Advance(time.Millisecond)
		if !r.Expired(e.clock.Now()) || !r.Deadline().Equal(created.Add(10*time.Second)) {
			t.Fatalf("not expired at the deadline %v", r.Deadline())
		}
		_, unknownErr := e.s.Get(ctx(t), taskstate.Ref{Owner: ref.Owner, ID: taskstate.NewID()})
		got, err := e.s.Get(ctx(t), ref)
		if got != nil || err != unknownErr || err != taskstate.ErrNotFound {
			t.Fatalf("Get expired = %v, %v; unknown id gives %v", got, err, unknownErr)
		}
		if !e.exists(t, ref) {
			t.Fatal("record left Redis before its grace ran out")
		}

		// The scripts draw the line at the same millisecond as Get.
		t.Run("at the deadline", func(t *testing.T) {
			before := e.raw(t, ref)
			if err := e.s.Heartbeat(ctx(t), ref, attempt); err != taskstate.ErrExpired {
				t.Fatalf("Heartbeat at the deadline = %v, want ErrExpired", err)
			}
			if _, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{}); err != taskstate.ErrExpired {
				t.Fatalf("Claim at the deadline = %v, want ErrExpired", err)
			}
			if err := e.s.RequestCancel(ctx(t), ref); err != taskstate.ErrNotFound {
				t.Fatalf("RequestCancel at the deadline = %v, want ErrNotFound", err)
			}
			if after := e.raw(t, ref); !maps.Equal(before, after) {
				t.Fatalf("record changed at the deadline: %v", changedFields(before, after))
			}
		})

		// Every write refuses an expired task and writes nothing.
		writes := []struct {
			name string
			do   func() error
			want error
		}{
			{"Claim", func() error { _, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{}); return err }, taskstate.ErrExpired},
			{"Progress", func() error { return e.s.Progress(ctx(t), ref, attempt, "x") }, taskstate.ErrExpired},
			{"Heartbeat", func() error { return e.s.Heartbeat(ctx(t), ref, attempt) }, taskstate.ErrExpired},
			{"Finish completed", func() error {
				return e.s.Finish(ctx(t), ref, attempt, outcome(proto.StatusCompleted))
			}, taskstate.ErrExpired},
			{"Finish cancelled", func() error {
				return e.s.Finish(ctx(t), ref, attempt, outcome(proto.StatusCancelled))
			}, taskstate.ErrExpired},
			{"RequestCancel", func() error { return e.s.RequestCancel(ctx(t), ref) }, taskstate.ErrNotFound},
		}
		for _, w := range writes {
			t.Run(w.name, func(t *testing.T) { e.unchanged(t, ref, w.do, w.want) })
		}
	})
}

// TestExpiryRemovesKey: the Redis expiry (ttl + grace) really deletes the
// record.
func TestExpiryRemovesKey(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnvOpts(t, b, taskstate.Options{ExpiryGrace: time.Millisecond})
		ref := e.create(t, taskstate.CreateParams{TTLMs: ttl(50)})
		keep := e.create(t, taskstate.CreateParams{}) // unlimited: never expires
		// (On redis-server the 50 ms may already be over here under load, so
		// presence right after Create is checked on miniredis only.)
		if b.Mini != nil && !e.exists(t, ref) {
			t.Fatal("record missing right after Create")
		}
		if b.Mini != nil {
			b.Mini.FastForward(51 * time.Millisecond)
		} else {
			waitFor(t, "redis-server to expire the record", func() bool { return !e.exists(t, ref) })
		}
		if e.exists(t, ref) {
			t.Fatal("record still in Redis after ttl + grace")
		}
		if _, err := e.s.Get(ctx(t), ref); err != taskstate.ErrNotFound {
			t.Fatalf("Get after expiry = %v, want ErrNotFound", err)
		}
		if _, err := e.s.Claim(ctx(t), ref, 0, taskstate.Share{}); !errors.Is(err, taskstate.ErrNotFound) {
			t.Fatalf("Claim after expiry = %v, want ErrNotFound", err)
		}
		if err := e.s.RequestCancel(ctx(t), ref); err != taskstate.ErrNotFound {
			t.Fatalf("RequestCancel after expiry = %v, want ErrNotFound", err)
		}
		if e.exists(t, ref) {
			t.Fatal("a refused write re-created the expired record")
		}
		if !e.exists(t, keep) {
			t.Fatal("the unlimited task expired too")
		}
	})
}

func TestKeys(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		k := e.s.Keys()
		if k.Prefix != b.Prefix {
			t.Fatalf("Keys().Prefix = %q, want %q", k.Prefix, b.Prefix)
		}
		alice := e.create(t, taskstate.CreateParams{Principal: "alice"})
		bob := e.create(t, taskstate.CreateParams{Principal: "bob"})
		aliceKeys := []string{k.Task(alice), k.Events(alice), k.Deadlines(alice.Owner)}
		aliceIDs := taskstate.Ref{Owner: alice.Owner, ID: taskstate.NewID()}
		aliceKeys = append(aliceKeys, k.Task(aliceIDs), k.Events(aliceIDs))
		for _, key := range aliceKeys {
			if !strings.HasPrefix(key, b.Prefix) {
				t.Errorf("%q lacks the prefix %q", key, b.Prefix)
			}
			if tag := hashTag(key); tag != alice.Owner {
				t.Errorf("%q has hash tag %q, want %q", key, tag, alice.Owner)
			}
			if slot(key) != slot(aliceKeys[0]) {
				t.Errorf("%q is in slot %d, not %d", key, slot(key), slot(aliceKeys[0]))
			}
		}
		if hashTag(k.Task(bob)) != bob.Owner || hashTag(k.Task(bob)) == hashTag(k.Task(alice)) {
			t.Fatalf("bob's key %q shares alice's tag", k.Task(bob))
		}
		if k.Task(taskstate.Ref{Owner: bob.Owner, ID: alice.ID}) == k.Task(alice) {
			t.Fatal("same id under two owners is one key")
		}
		if !strings.HasPrefix(e.s.Catalog().Keys().Entries(), b.Prefix) || k.Task(alice) == k.Events(alice) {
			t.Fatalf("key names collide: %q %q %q", e.s.Catalog().Keys().Entries(), k.Task(alice), k.Events(alice))
		}
		// The record really lives under the key Keys names.
		if !e.exists(t, alice) {
			t.Fatalf("no record at %q", k.Task(alice))
		}
	})
}

func TestOwnerTag(t *testing.T) {
	t.Parallel()
	principals := []string{"", "alice", "bob", "Alice", "alice ", "{alice}", "anonymous", strings.Repeat("x", 1000)}
	seen := map[string]string{}
	for _, p := range principals {
		tag := taskstate.OwnerTag(p)
		if tag != taskstate.OwnerTag(p) {
			t.Fatalf("OwnerTag(%q) is not stable", p)
		}
		if len(tag) != 25 || tag[0] != 'p' || strings.ContainsAny(tag, "{}") {
			t.Fatalf("OwnerTag(%q) = %q", p, tag)
		}
		if q, dup := seen[tag]; dup {
			t.Fatalf("OwnerTag(%q) == OwnerTag(%q)", p, q)
		}
		seen[tag] = p
	}
	if taskstate.DefaultPrefix == "" || (taskstate.Keys{}).Events(taskstate.Ref{Owner: "p", ID: "x"}) != "{p}:events:x" {
		t.Fatal("Keys with an empty prefix should not add one")
	}
}

// hashTag is the part of key Redis Cluster hashes: the text between the
// first '{' and the next '}', when non-empty; otherwise the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// slot is the Redis Cluster slot of key (CRC16/XMODEM of its hash tag).
func slot(key string) int {
	var crc uint16
	for _, c := range []byte(hashTag(key)) {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

func TestSlot(t *testing.T) {
	t.Parallel()
	// Known values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]int{"123456789": 12739, "foo": 12182, "{user1000}.following": 3443,
		"{user1000}.followers": 3443} {
		if got := slot(key); got != want {
			t.Errorf("slot(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestStoreDefaults(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		s := taskstate.New(b.Client, taskstate.Options{})
		if s.Keys().Prefix != taskstate.DefaultPrefix {
			t.Fatalf("default prefix %q", s.Keys().Prefix)
		}
		if d := time.Since(s.Now()); d < 0 || d > time.Minute {
			t.Fatalf("default clock is %v off", d)
		}
		c := newClock()
		if got := taskstate.New(b.Client, taskstate.Options{Clock: c.Now}).Now(); !got.Equal(c.Now()) {
			t.Fatalf("Now() = %v, want the injected clock", got)
		}
	})
}
