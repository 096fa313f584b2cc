// Package legacy is the 2025-11-25 era of mcpq's front end (docs/eras.md):
// the handshake revision of MCP, whose clients open a session with
// initialize and name it with Mcp-Session-Id on every later request.
//
// Its Redis side (Store) keeps the sessions and the logs of their SSE
// streams beside the task records, under the same prefix and owner hash
// tag (keys.go), with one script (scripts/getstream.lua).
package legacy
