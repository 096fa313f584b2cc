package taskstate

import (
	"embed"
	"strconv"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// loadScript builds a script from the generated transition table and
// return codes, the shared prelude, the timeline helper and the named
// transition file.
func loadScript(name string) *redis.Script {
	prelude, err := scriptFS.ReadFile("scripts/prelude.lua")
	if err != nil {
		panic(err)
	}
	timeline, err := scriptFS.ReadFile("scripts/timeline.lua")
	if err != nil {
		panic(err)
	}
	body, err := scriptFS.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return redis.NewScript(luaTransitions() + luaCodes() + luaLimits + string(prelude) + string(timeline) + string(body))
}

// EventResultMax is the largest result (JSON bytes) a completed task's
// event carries (scripts/finish.lua), so a call waiting on the task answers
// without reading the record back; longer results, and those of a task
// whose reservation settled (the receipt joins the result on read), are
// read from the record.
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
