// Package taskstate owns mcpq's durable tasks in Redis: every key name of a
// task (keys.go), every Lua script of its life (scripts/*.lua, one per
// transition), the task state machine (transitions.go), and the
// reservations and settlements of billing, which run inside those scripts.
// Three sub-packages hold the other shared state: billing (accounts,
// ledgers and the money types), catalog (what workers publish and serve)
// and events (what the scripts announce on a task's channel, and the hub
// that subscribes to it).
//
// The task record is the source of truth. Every state change is one Lua
// script that checks the transition table first and writes nothing when it
// refuses; terminal states never change. Time comes from an injected clock
// and enters scripts as an argument, so the scripts behave the same on
// miniredis and on a real redis-server.
package taskstate
