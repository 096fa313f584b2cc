// Package legacy is the 2025-11-25 era of mcpq's front end (docs/eras.md):
// the handshake revision of MCP, whose clients open a session with
// initialize and name it with Mcp-Session-Id on every later request.
//
// The era is a client of the modern server more than a server of its own.
// A request of a session is served by the same modern method as its twin,
// with a _meta rebuilt from the session; what is the era's alone is here:
// the handshake and the session's life (era.go), tools/call with a task
// parameter and the era's tasks utility (tasks.go), input requests relayed
// as server-to-client requests (input.go), the session's GET stream and
// resource subscriptions (stream.go), and resumable streams (resume.go).
//
// It plugs into package frontend through one hook, frontend/era.go: the
// front end implements Host and Request for it, hands it the requests it
// claims, and asks a request's Call where the modern call path leaves a
// decision to an era (frontend/hook.go). No other file of the front end
// names this package but its tests of the whole server through its router
// (frontend/legacy_test.go, resume_test.go), so dropping the era means
// deleting this folder, frontend/era.go, those tests and the line of
// frontend.New that calls plugLegacy.
//
// Its Redis side (Store) keeps the sessions and the logs of their SSE
// streams beside the task records, under the same prefix and owner hash
// tag (keys.go), with three scripts (scripts/*.lua).
package legacy
