package taskstate

import (
	"embed"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// script is one transition script in its two forms: the EVAL source
// (generated tables, prelude, timeline helper and body in one text) for a
// Redis without functions, and the body alone, a function of the library
// (functions.go) where Redis has them. The EVAL source is built on a
// Store's first EVALSHA of the script, not at init: a process on Redis
// functions never holds fifteen copies of the prelude, a live heap the
// collector would otherwise trace on every cycle (docs/benchmarks.md).
type script struct {
	name string               // the file's name, scripts/<name>.lua
	body string               // the file's text
	eval func() *redis.Script // shared + body, run with EVALSHA
	fn   func() string        // the library's function, mcpq_<hash>_<name>
}

// scripts are all the scripts loadScript built, the library's functions.
var scripts []*script

// readScript returns scripts/<name>.lua.
func readScript(name string) string {
	b, err := scriptFS.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// sharedLua is what every script starts with: the generated transition
// table and return codes, the limits, the prelude and the timeline helper.
var sharedLua = sync.OnceValue(func() string {
	return luaTransitions() + luaCodes() + luaLimits + readScript("prelude") + readScript("timeline")
})

// loadScript builds the named script and records it for the library.
func loadScript(name string) *script {
	body := readScript(name)
	sc := &script{name: name, body: body}
	sc.eval = sync.OnceValue(func() *redis.Script { return redis.NewScript(sharedLua() + body) })
	sc.fn = sync.OnceValue(func() string { return libraryName() + "_" + name })
	scripts = append(scripts, sc)
	return sc
}

// EventResultMax is the largest result (JSON bytes) a completed task's
// event carries (scripts/finish.lua) for a waiting call to answer with;
// longer ones, and a settled task's (its receipt joins it), are read back.
const EventResultMax = 8 << 10

// luaLimits renders the limits scripts share with Go as Lua locals.
var luaLimits = "local EVENT_RESULT_MAX = " + strconv.Itoa(EventResultMax) + "\n"

var (
	createScript     = loadScript("create")
	claimScript      = loadScript("claim")
	heartbeatScript  = loadScript("heartbeat")
	progressScript   = loadScript("progress")
	finishScript     = loadScript("finish")
	cancelScript     = loadScript("cancel")
	inputScript      = loadScript("input")
	updateScript     = loadScript("update")
	checkpointScript = loadScript("checkpoint")
	ttlScript        = loadScript("ttl")
	reapScript       = loadScript("reap")
	takeoverScript   = loadScript("takeover")
	meterScript      = loadScript("meter")
	handBackScript   = loadScript("handback")
	releaseScript    = loadScript("release")
)
