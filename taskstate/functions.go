package taskstate

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// The scripts as a Redis function library (Redis 7 and later).
//
// Run with EVALSHA, each script is the whole of sharedLua plus its body,
// and every call runs the prelude's top level again: its tables and
// closures, about 3.6 µs of Redis CPU a call (docs/benchmarks.md). A
// function library runs its top level once, at FUNCTION LOAD, and each
// script is a registered function that runs only its body. The bodies and
// the prelude read KEYS and ARGV, which a function is handed as arguments:
// the library declares them as locals above the prelude, and each function
// sets them on entry (Redis runs one function at a time, so no call sees
// another's).
//
// The library's name carries a hash of its source (mcpq_<hash>, and each
// function mcpq_<hash>_<script>), so two mcpq versions on one Redis (a
// rolling upgrade) each call their own: a load never replaces another
// version's library, and a load of one already there ("already exists")
// is a success, as the same name is the same source. An old version's
// library stays until deleted (FUNCTION DELETE; docs/deploy.md).
//
// Redis keeps functions in its RDB and AOF and sends them to replicas, so
// a failover keeps them; a Redis restarted without persistence, or a
// FUNCTION FLUSH, does not: a call that finds no function ("Function not
// found", as NOSCRIPT for a script) loads the library again (on a Cluster,
// on every primary) and runs once more. A Redis without functions (before
// 7, miniredis, a proxy or an ACL user refused FUNCTION) answers the first
// load with an error, and the store runs the scripts with EVALSHA from
// then on. None of the scripts is read-only, so none has the no-writes
// flag.

// librarySource is the library's FUNCTION LOAD source.
func librarySource() string {
	name := libraryName()
	var b strings.Builder
	b.WriteString("#!lua name=" + name + "\n")
	// KEYS and ARGV, set by each function on entry, are upvalues of the
	// prelude's helpers and of the bodies.
	b.WriteString("local KEYS, ARGV\n")
	b.WriteString(sharedLua())
	for _, sc := range scripts {
		fmt.Fprintf(&b, "redis.register_function('%s_%s', function(keys, args)\nKEYS, ARGV = keys, args\n%s\nend)\n", name, sc.name, sc.body)
	}
	return b.String()
}

// libraryName is the library's name, mcpq_ and a hash of its source,
// computed on first use (after every loadScript of the package's
// variables). The source itself is built only for a FUNCTION LOAD, which
// is rare (a Store's first call, a Redis that lost the library), and not
// kept.
var libraryName = sync.OnceValue(func() string {
	h := sha1.New()
	io.WriteString(h, sharedLua())
	for _, sc := range scripts {
		io.WriteString(h, "\x00"+sc.name+"\x00"+sc.body)
	}
	return "mcpq_" + hex.EncodeToString(h.Sum(nil))[:12]
})

// Which way a Store runs its scripts (functions.mode).
const (
	modeUnknown   int32 = iota // not probed yet, or the probe failed for now
	modeScripts                // EVALSHA: the Redis has no functions
	modeFunctions              // FCALL: the library is loaded
)

// functions is a Store's choice between FCALL and EVALSHA.
type functions struct {
	mode atomic.Int32
	mu   sync.Mutex // one load at a time
	// off is Options.NoFunctions.
	off bool
}

// use says whether to call functions, probing on first use: it loads the
// library, and a Redis that refuses FUNCTION LOAD outright means scripts.
// A failure that may pass (a network error) leaves the choice open, and
// the call runs as a script meanwhile: both ways give the same result.
func (f *functions) use(ctx context.Context, rdb redis.UniversalClient) bool {
	switch f.mode.Load() {
	case modeFunctions:
		return true
	case modeScripts:
		return false
	}
	if f.off {
		f.mode.Store(modeScripts)
		return false
	}
	err := f.load(ctx, rdb)
	switch {
	case err == nil:
		f.mode.CompareAndSwap(modeUnknown, modeFunctions)
	case noFunctions(err):
		f.mode.CompareAndSwap(modeUnknown, modeScripts)
	}
	return f.mode.Load() == modeFunctions
}

// load loads the library on rdb (on a Cluster on every primary).
func (f *functions) load(ctx context.Context, rdb redis.UniversalClient) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	src := librarySource()
	one := func(ctx context.Context, c redis.Cmdable) error {
		err := c.FunctionLoad(ctx, src).Err()
		if err != nil && strings.Contains(err.Error(), "already exists") {
			return nil
		}
		if err != nil {
			return fmt.Errorf("taskstate: FUNCTION LOAD of the script library: %w", err)
		}
		return nil
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return one(ctx, c) })
	}
	return one(ctx, rdb)
}

// noFunctions says err is a Redis refusing FUNCTION for good: an unknown
// command (before Redis 7, miniredis) or an ACL refusal.
func noFunctions(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := strings.ToLower(re.Error())
	return strings.Contains(msg, "unknown command") || strings.HasPrefix(msg, "noperm")
}

// isMissing says a script or function call found no script or function:
// NOSCRIPT, or "Function not found" after a FUNCTION FLUSH or a restart.
func isMissing(err error) bool {
	return err != nil && (redis.HasErrorPrefix(err, "NOSCRIPT") || strings.Contains(err.Error(), "Function not found"))
}

// run runs sc: FCALL where Redis has functions (loading the library again
// once if it is gone), else EVALSHA (loading the script again once after a
// NOSCRIPT).
func (s *Store) run(ctx context.Context, sc *script, keys []string, args ...any) *redis.Cmd {
	return runAs(ctx, s, redis.NewCmd, sc, keys, args)
}

// runStrings is run for a script whose reply is a flat array of strings
// and integers (claim's record): each element read as a string, not boxed
// in an interface as a *redis.Cmd's reply is, one allocation an element
// fewer.
func (s *Store) runStrings(ctx context.Context, sc *script, keys []string, args ...any) ([]string, error) {
	return runAs(ctx, s, redis.NewStringSliceCmd, sc, keys, args).Result()
}

// runAs is run with the reply read as newCmd's command reads it.
func runAs[C redis.Cmder](ctx context.Context, s *Store, newCmd func(context.Context, ...any) C, sc *script,
	keys []string, args []any) C {
	call := func(verb, name string) C {
		a := make([]any, 0, 3+len(keys)+len(args))
		a = append(a, verb, name, len(keys))
		for _, k := range keys {
			a = append(a, k)
		}
		cmd := newCmd(ctx, append(a, args...)...)
		_ = s.rdb.Process(ctx, cmd)
		return cmd
	}
	if s.fns.use(ctx, s.rdb) {
		cmd := call("fcall", sc.fn())
		if isMissing(cmd.Err()) && s.fns.load(ctx, s.rdb) == nil {
			cmd = call("fcall", sc.fn())
		}
		return cmd
	}
	ev := sc.eval()
	cmd := call("evalsha", ev.Hash())
	if isMissing(cmd.Err()) && ev.Load(ctx, s.rdb).Err() == nil {
		cmd = call("evalsha", ev.Hash())
	}
	return cmd
}

// send queues sc on pipe, FCALL or EVALSHA as run would, without the
// retry: the caller, seeing isMissing, runs it again with resend.
func (s *Store) send(ctx context.Context, pipe redis.Pipeliner, sc *script, keys []string, args ...any) *redis.Cmd {
	if s.fns.use(ctx, s.rdb) {
		return pipe.FCall(ctx, sc.fn(), keys, args...)
	}
	return sc.eval().EvalSha(ctx, pipe, keys, args...)
}

// recover queues sc on pipe after a call found it missing: the library
// loaded again and FCALL, or EVAL with the script's source.
func (s *Store) resend(ctx context.Context, pipe redis.Pipeliner, sc *script, keys []string, args ...any) *redis.Cmd {
	if s.fns.use(ctx, s.rdb) {
		if err := s.fns.load(ctx, s.rdb); err != nil {
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd
		}
		return pipe.FCall(ctx, sc.fn(), keys, args...)
	}
	return sc.eval().Eval(ctx, pipe, keys, args...)
}
