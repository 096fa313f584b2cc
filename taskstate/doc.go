// Package taskstate owns mcpq's durable tasks in Redis: every key name of a
// task (keys.go), every Lua script of its life (scripts/*.lua, one per
// transition), the task state machine (transitions.go), and billing, whose
// reservations and settlements run inside those scripts. Two sub-packages
// hold the other shared state: catalog (what workers publish and serve)
// and events (what the scripts announce on a task's channel, and the hub
// that subscribes to it).
//
// The task record is the source of truth. Every state change is one Lua
// script that checks the transition table first and writes nothing when it
// refuses; terminal states never change. Time comes from an injected clock
// and enters scripts as an argument, so the scripts behave the same on
// miniredis and on a real redis-server.
package taskstate
