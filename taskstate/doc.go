// Package taskstate owns mcpq's durable state in Redis: every key name
// (keys.go), every Lua script (scripts/*.lua, one per transition), the task
// state machine (transitions.go), the tool catalog and task events.
//
// The task record is the source of truth. Every state change is one Lua
// script that checks the transition table first and writes nothing when it
// refuses; terminal states never change. Time comes from an injected clock
// and enters scripts as an argument, so the scripts behave the same on
// miniredis and on a real redis-server.
package taskstate
