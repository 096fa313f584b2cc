package access

// Managed API keys (kept only as hashes) and the per-principal token
// bucket, on both backends.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpq/mcpq/internal/redistest"
	"github.com/mcpq/mcpq/taskstate"
)

// TestMain stops the redis-server redistest may have started.
func TestMain(m *testing.M) { redistest.Main(m) }

// fakeClock is the Store's clock: it stamps new keys, and plays no part
// in a bucket (Redis's clock does).
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock { return &fakeClock{now: time.UnixMilli(time.Now().UnixMilli())} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is one test's store on one backend (redistest gives each test a
// prefix of its own).
type env struct {
	b     *redistest.Backend
	s     *Store
	clock *fakeClock
}

func newEnv(t *testing.T, b *redistest.Backend) *env {
	t.Helper()
	clock := newClock()
	return &env{b: b, s: New(b.Client, b.Prefix, clock.Now), clock: clock}
}

// ctx is a context bounded by the test's life.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// allValues returns every string stored under the env's prefix: key
// names, string values, hash fields and values, set and sorted-set members.
func (e *env) allValues(t *testing.T) []string {
	t.Helper()
	c := ctx(t)
	rdb := e.b.Client
	var out []string
	iter := rdb.Scan(c, 0, e.b.Prefix+"*", 100).Iterator()
	for iter.Next(c) {
		k := iter.Val()
		out = append(out, k)
		typ, err := rdb.Type(c, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case "string":
			out = append(out, rdb.Get(c, k).Val())
		case "hash":
			for f, v := range rdb.HGetAll(c, k).Val() {
				out = append(out, f, v)
			}
		case "set":
			out = append(out, rdb.SMembers(c, k).Val()...)
		case "zset":
			out = append(out, rdb.ZRange(c, k, 0, -1).Val()...)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAPIKeys(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		c := ctx(t)
		key1, info1, err := e.s.CreateKey(c, "carol")
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		key2, info2, err := e.s.CreateKey(c, "carol")
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		keyD, infoD, err := e.s.CreateKey(c, "dave")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []struct {
			key  string
			info KeyInfo
			who  string
		}{{key1, info1, "carol"}, {key2, info2, "carol"}, {keyD, infoD, "dave"}} {
			if !strings.HasPrefix(k.key, "mcpq_"+k.info.ID+"_") || len(k.key) < 40 {
				t.Errorf("key %q does not start with mcpq_<id>_ or is short (id %q)", k.key, k.info.ID)
			}
			if k.info.Principal != k.who {
				t.Errorf("key %s is for %q, want %q", k.info.ID, k.info.Principal, k.who)
			}
			p, ok, err := e.s.LookupKey(c, k.key)
			if err != nil || !ok || p != k.who {
				t.Errorf("LookupKey(%s) = %q %v %v, want %q", k.info.ID, p, ok, err, k.who)
			}
		}
		if key1 == key2 || info1.ID == info2.ID {
			t.Errorf("two keys for one principal are equal")
		}

		// Only hashes are kept: no stored string holds a key or its secret.
		for _, v := range e.allValues(t) {
			for _, k := range []struct {
				key string
				id  string
			}{{key1, info1.ID}, {key2, info2.ID}, {keyD, infoD.ID}} {
				// Not the text after the last "_": the secret's own alphabet
				// has "_", and a short tail can match any stored string.
				secret := strings.TrimPrefix(k.key, "mcpq_"+k.id+"_")
				if strings.Contains(v, secret) {
					t.Errorf("Redis holds the secret of a key: %q", v)
				}
			}
		}
		if n := e.b.Client.HExists(c, e.s.keys.apiKeys(), HashKey(key1)).Val(); !n {
			t.Errorf("the key's SHA-256 is not the stored field")
		}

		// Near misses are not keys.
		for _, k := range []string{"", key1 + "x", key1[:len(key1)-1], strings.ToUpper(key1), " " + key1,
			"mcpq_" + info1.ID + "_", info1.ID, HashKey(key1)} {
			if p, ok, err := e.s.LookupKey(c, k); ok || err != nil {
				t.Errorf("LookupKey(%q) = %q %v %v", k, p, ok, err)
			}
		}

		list, err := e.s.ListKeys(c)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, k := range list {
			ids = append(ids, k.ID)
			if k.CreatedAt.IsZero() {
				t.Errorf("key %s has no createdAt", k.ID)
			}
		}
		if strings.Join(ids, ",") != strings.Join([]string{info1.ID, info2.ID, infoD.ID}, ",") {
			t.Errorf("ListKeys %v, want oldest first %v %v %v", ids, info1.ID, info2.ID, infoD.ID)
		}

		// Revoking one key leaves the principal's other keys working.
		if err := e.s.RevokeKey(c, info1.ID); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := e.s.LookupKey(c, key1); ok {
			t.Errorf("a revoked key still authenticates")
		}
		if p, ok, _ := e.s.LookupKey(c, key2); !ok || p != "carol" {
			t.Errorf("carol's other key stopped working")
		}
		if err := e.s.RevokeKey(c, info1.ID); !errors.Is(err, ErrNoSuchKey) {
			t.Errorf("revoke twice: %v, want ErrNoSuchKey", err)
		}
		for _, id := range []string{"", "nope", info1.ID + "0", key2, HashKey(key2)} {
			if err := e.s.RevokeKey(c, id); !errors.Is(err, ErrNoSuchKey) {
				t.Errorf("RevokeKey(%q): %v, want ErrNoSuchKey", id, err)
			}
		}
		if list, _ = e.s.ListKeys(c); len(list) != 2 {
			t.Errorf("after revoke ListKeys has %d keys, want 2", len(list))
		}
		// A stored entry that is not a KeyInfo authenticates nobody.
		if err := e.b.Client.HSet(c, e.s.keys.apiKeys(), HashKey("junk"), "{not json").Err(); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := e.s.LookupKey(c, "junk"); ok || err != nil {
			t.Errorf("a corrupt entry authenticated: %v %v", ok, err)
		}
		if err := e.b.Client.HSet(c, e.s.keys.apiKeys(), HashKey("empty"), `{"id":"x"}`).Err(); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := e.s.LookupKey(c, "empty"); ok {
			t.Errorf("an entry without a principal authenticated")
		}

		for _, p := range []string{"", "a b", "a:b", "a,b", "a\nb", "a\tb", " ", "\r"} {
			if _, _, err := e.s.CreateKey(c, p); err == nil {
				t.Errorf("CreateKey(%q) accepted", p)
			}
		}
	})
}

// TestAllow: the token bucket on Redis's clock. Its arithmetic is checked
// on miniredis, whose clock the test sets; on a real redis-server the rate
// is so slow (one token per 1000 s) that no pause of the machine refills one.
func TestAllow(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b)
		c := ctx(t)
		expect := func(what, p string, rate float64, burst int, wantOK bool, wantWait time.Duration) {
			t.Helper()
			ok, w, err := e.s.Allow(c, p, rate, burst)
			if err != nil {
				t.Fatal(err)
			}
			if ok != wantOK || w != wantWait {
				t.Errorf("%s: Allow = %v wait %v, want %v wait %v", what, ok, w, wantOK, wantWait)
			}
		}
		// The bucket is under the principal's tag, and expires when idle.
		defer func() {
			key := e.s.keys.rate("alice")
			if !strings.Contains(key, "{"+taskstate.OwnerTag("alice")+"}") {
				t.Errorf("rate key %q lacks the owner's hash tag", key)
			}
			if d := e.b.Client.PTTL(c, key).Val(); d <= 0 {
				t.Errorf("rate key TTL %v, want one", d)
			}
		}()
		if b.Mini == nil {
			const slow = 0.001 // one token per 1000 s
			for i := range 3 {
				expect("burst "+string(rune('1'+i)), "alice", slow, 3, true, 0)
			}
			for _, what := range []string{"past the burst", "refused again"} {
				ok, w, err := e.s.Allow(c, "alice", slow, 3)
				if err != nil || ok || w <= 990*time.Second || w > 1000*time.Second {
					t.Errorf("%s: Allow = %v wait %v err %v, want refused for about 1000 s", what, ok, w, err)
				}
			}
			expect("bob untouched", "bob", slow, 3, true, 0)
			return
		}
		redisNow := time.UnixMilli(time.Now().UnixMilli())
		advance := func(d time.Duration) { redisNow = redisNow.Add(d); b.Mini.SetTime(redisNow) }
		advance(0)
		// 2 per second, burst 3: three at once, then one every 500ms.
		for i := range 3 {
			expect("burst "+string(rune('1'+i)), "alice", 2, 3, true, 0)
		}
		expect("past the burst", "alice", 2, 3, false, 500*time.Millisecond)
		expect("refused again", "alice", 2, 3, false, 500*time.Millisecond)
		e.clock.Advance(time.Hour) // the Store's clock plays no part
		expect("store clock ignored", "alice", 2, 3, false, 500*time.Millisecond)
		advance(250 * time.Millisecond)
		expect("half a token", "alice", 2, 3, false, 250*time.Millisecond)
		advance(250 * time.Millisecond)
		expect("refilled one", "alice", 2, 3, true, 0)
		expect("empty again", "alice", 2, 3, false, 500*time.Millisecond)
		// Another principal has a bucket of its own.
		expect("bob untouched", "bob", 2, 3, true, 0)
		// A long pause refills to the burst, never beyond.
		advance(time.Hour)
		for range 3 {
			expect("after an hour", "alice", 2, 3, true, 0)
		}
		expect("capped at the burst", "alice", 2, 3, false, 500*time.Millisecond)
		// Slow rates round the wait up to whole milliseconds.
		expect("slow first", "carol", 0.3, 1, true, 0)
		expect("slow refused", "carol", 0.3, 1, false, 3334*time.Millisecond)
		advance(3334 * time.Millisecond)
		expect("slow refilled", "carol", 0.3, 1, true, 0)
		// A bucket a millisecond into its refill holds 1e-06 tokens at
		// 1 per 1000 s, which the script keeps without an exponent: Lua
		// reads "1e-06" back as nothing on miniredis, and the bucket was
		// full again.
		expect("very slow first", "dave", 0.001, 1, true, 0)
		advance(time.Millisecond)
		expect("very slow refused", "dave", 0.001, 1, false, 999999*time.Millisecond)
		advance(time.Millisecond)
		expect("very slow refused again", "dave", 0.001, 1, false, 999998*time.Millisecond)
	})
}

// TestAllowSkewedCallers: two front ends whose clocks disagree by an hour
// share one bucket and together get no more than its burst (issue 13: on
// the callers' clocks each alternation refilled the bucket by the skew).
func TestAllowSkewedCallers(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		behind, ahead := newClock(), newClock()
		ahead.Advance(time.Hour)
		stores := []*Store{New(b.Client, b.Prefix, behind.Now), New(b.Client, b.Prefix, ahead.Now)}
		c := ctx(t)
		allowed := 0
		for i := range 20 {
			ok, _, err := stores[i%2].Allow(c, "alice", 0.001, 3)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				allowed++
			}
			behind.Advance(time.Second)
			ahead.Advance(time.Second)
		}
		if allowed != 3 {
			t.Errorf("two skewed front ends got %d requests through a bucket of 3 refilling once per 1000 s", allowed)
		}
	})
}
