// Package frontend is mcpq's stateless MCP front end: Streamable HTTP
// (POST /mcp) speaking MCP 2026-07-28 with the Tasks extension. It keeps no
// per-client state: every call reads and writes the task records in Redis
// through taskstate, enqueues jobs through asynq, and waits on task events
// through Redis pub/sub, so any replica answers any request.
package frontend
