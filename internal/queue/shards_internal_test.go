package queue

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/taskstate"
)

// TestKeySlot checks the slot function against Redis Cluster's
// specification: CRC16 XMODEM ("123456789" → 0x31C3), its example slots,
// and hash tags.
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]uint16{
		"123456789":            0x31C3,
		"foo":                  12182,
		"{user1000}.following": keySlot("user1000"),
		"foo{}{bar}":           keySlot("foo{}{bar}"), // an empty tag: the whole key
		"foo{{bar}}zap":        keySlot("{bar"),
		"asynq:{mcpq:gpu}:t:x": keySlot("mcpq:gpu"),
	} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
	if keySlot("foo{}{bar}") == keySlot("bar") {
		t.Errorf("an empty hash tag must not hash the next one")
	}
}

// TestShardQueuesSpread: shard 0 keeps the plain name, the names differ
// and unshard back to the queue, and the n shards take each of n equal
// slot ranges once.
func TestShardQueuesSpread(t *testing.T) {
	for _, q := range []string{"mcpq:gpu", "mcpq:default", "t123:x"} {
		for n := 1; n <= 64; n++ {
			names := ShardQueues(q, n)
			if len(names) != n || names[0] != q {
				t.Fatalf("ShardQueues(%q, %d) = %v: want %d names, %q first", q, n, names, n, q)
			}
			ranges := make([]bool, n)
			seen := map[string]bool{}
			for _, name := range names {
				if seen[name] {
					t.Fatalf("ShardQueues(%q, %d): %q twice", q, n, name)
				}
				seen[name] = true
				if got := unshard(name); got != q {
					t.Fatalf("unshard(%q) = %q, want %q", name, got, q)
				}
				r := int(keySlot("asynq:{"+name+"}:pending")) * n / clusterSlots
				if ranges[r] {
					t.Fatalf("ShardQueues(%q, %d): two shards in slot range %d", q, n, r)
				}
				ranges[r] = true
			}
			if again := ShardQueues(q, n); strings.Join(again, ",") != strings.Join(names, ",") {
				t.Fatalf("ShardQueues(%q, %d) changed: %v then %v", q, n, names, again)
			}
		}
	}
	if got := unshard("gpu~x"); got != "gpu~x" {
		t.Errorf("unshard(gpu~x) = %q: only a number ends a shard's name", got)
	}
}

// TestShardOfSpreads: task ids spread over the shards within 20 % of
// even (10,000 ids, 8 shards: about 3 % is the standard deviation).
func TestShardOfSpreads(t *testing.T) {
	const n, ids = 8, 10000
	counts := make([]int, n)
	for i := range ids {
		counts[shardOf("01J"+strconv.Itoa(i*7919), n)]++
	}
	for s, c := range counts {
		if c < ids/n*8/10 || c > ids/n*12/10 {
			t.Errorf("shard %d got %d of %d ids (%v)", s, c, ids, counts)
		}
	}
	if shardOf("x", 1) != 0 {
		t.Errorf("one shard: shard 0")
	}
}

// TestShardPickAllocatesNothing: picking a create's shard adds no
// allocation to the create path.
func TestShardPickAllocatesNothing(t *testing.T) {
	c := NewClient(nil, Options{Shards: Shards{"gpu": 4}})
	j := Job{Ref: taskstate.Ref{Owner: "o", ID: "01JABCDEFGHIJKLMNOPQRSTUVW"}, Queue: "gpu"}
	var q string
	if n := testing.AllocsPerRun(100, func() { q = c.asynqQueue(j) }); n != 0 {
		t.Errorf("asynqQueue allocates %v times", n)
	}
	if want := ShardQueues(c.keys.Queue("gpu"), 4)[shardOf(j.Ref.ID, 4)]; q != want {
		t.Errorf("asynqQueue = %q, want %q", q, want)
	}
}
