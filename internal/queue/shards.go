package queue

import (
	"strconv"
	"strings"
	"sync"
)

// Queue shards (docs/deploy.md, "Queue shards"): all of one asynq queue's
// keys carry the queue name as their hash tag ("asynq:{<queue>}:...", keys.go),
// so one queue is one Redis Cluster slot, one primary's work however large
// the cluster. A queue of n shards is n asynq queues: shard 0 keeps the
// plain name (an unsharded queue is unchanged in Redis), shard i > 0 is the
// name plus ShardSep and a small number k. k is the first that puts the
// shard's slot in a slot range no other shard of the queue has, of n equal
// ranges (shard 0's range being the one its plain name falls in), so the
// shards spread evenly over a cluster whose primaries own contiguous equal
// ranges. A task's jobs all go to the shard its id picks (shardOf), so a
// drop or a revive finds them without a record of where they went.

// ShardSep joins a sharded queue's name and its shard's number in the
// asynq queue name of a shard other than 0: "gpu~7". Queue names do not
// contain it (cmd/mcpq allows letters, digits and "_-.").
const ShardSep = "~"

// MaxShards is the most shards a queue may have.
const MaxShards = 256

// clusterSlots is the number of Redis Cluster hash slots.
const clusterSlots = 16384

// Shards maps an mcpq queue name to its number of shards; a queue not
// named, or named with 1 (or less), has one: its plain name.
type Shards map[string]int

// of is queue's number of shards.
func (s Shards) of(queue string) int {
	return min(max(s[queue], 1), MaxShards)
}

// shardNames caches shard names by asynq queue name and count: computing
// them costs about n² CRC16s, done once per process.
var shardNames sync.Map // shardKey → []string

type shardKey struct {
	queue string
	n     int
}

// ShardQueues are the asynq queue names of the n shards of asynq queue q
// (Keys.Queue of an mcpq name), shard 0 first: q itself.
func ShardQueues(q string, n int) []string {
	n = min(max(n, 1), MaxShards)
	if n == 1 {
		return []string{q}
	}
	key := shardKey{q, n}
	if v, ok := shardNames.Load(key); ok {
		return v.([]string)
	}
	rangeOf := func(name string) int { return int(keySlot("asynq:{"+name+"}:pending")) * n / clusterSlots }
	names := make([]string, 0, n)
	names = append(names, q)
	taken := make([]bool, n)
	taken[rangeOf(q)] = true
	k := 1
	for r := 0; r < n; r++ {
		if taken[r] {
			continue
		}
		// About n tries per shard; k goes on from the last shard's, so
		// no name repeats.
		for ; ; k++ {
			name := q + ShardSep + strconv.Itoa(k)
			if rangeOf(name) == r {
				names = append(names, name)
				taken[r] = true
				k++
				break
			}
		}
	}
	v, _ := shardNames.LoadOrStore(key, names)
	return v.([]string)
}

// shardOf is the shard (0 to n-1) of every job of the task with id id:
// a hash of the id, so a queue's tasks spread evenly over its shards and
// a task's drop, revive or next job finds the shard again.
func shardOf(id string, n int) int {
	if n <= 1 {
		return 0
	}
	h := uint32(2166136261) // FNV-1a, inline: this runs on every create
	for i := 0; i < len(id); i++ {
		h = (h ^ uint32(id[i])) * 16777619
	}
	return int(h % uint32(n))
}

// unshard is the mcpq queue name of a shard's name (Keys.QueueName of a
// shard's asynq queue): the name without its shard suffix.
func unshard(name string) string {
	base, k, ok := strings.Cut(name, ShardSep)
	if !ok {
		return name
	}
	if _, err := strconv.Atoi(k); err != nil {
		return name
	}
	return base
}

// keySlot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of its
// hash tag (the part between its first "{" and the next "}", when not
// empty) or of the whole key, mod 16384.
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % clusterSlots
}
