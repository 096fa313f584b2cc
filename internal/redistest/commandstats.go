package redistest

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// CommandStats sums the calls and usec (Redis µs inside the command) that
// INFO commandstats gives the named commands ("evalsha", "fcall"), for
// benchmarks that take a delta around their timed calls.
func CommandStats(t testing.TB, c redis.UniversalClient, commands ...string) (calls, usec int64) {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		cmd, stat := strings.CutPrefix(name, "cmdstat_")
		if !ok || !stat || !slices.Contains(commands, cmd) {
			continue
		}
		for kv := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				calls += n
			case "usec":
				usec += n
			}
		}
	}
	return calls, usec
}
