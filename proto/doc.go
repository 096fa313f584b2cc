// Package proto holds the MCP 2026-07-28 wire types, the Tasks extension
// (io.modelcontextprotocol/tasks) types, method names, _meta keys and
// JSON-RPC error codes. It does no I/O.
package proto
