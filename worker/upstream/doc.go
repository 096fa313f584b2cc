// Package upstream serves the tools of MCP servers that already exist as
// mcpq tools: a worker starts a stdio server (or reaches a Streamable HTTP
// one), lists its tools and publishes them; each job calls the upstream
// tool and turns what comes back into the task's statusMessage and result.
//
// The servers are declared in the tools file's "servers" list (Load; the
// format is in docs/tools.md, "Upstream MCP servers"). Both eras of
// upstream are spoken: servers that need initialize (2025-11-25 and the
// revisions before it) and 2026-07-28 stateless servers.
//
// A stdio server is a pool of processes, one call at a time on each, so a
// request the server sends during a call belongs to that call. A process
// that exits is started again for the next call; its stderr goes to the
// worker's log and its tail into the failed call's error. The client's
// credentials are never sent upstream.
//
// The upstream's elicitation, sampling and roots requests during a call
// become the task's input requests (relay.go): the call stays open on its
// session, and the worker's slot held, until the client answered
// (worker.Call.HoldInput). An upstream that answers a call with a task
// of its own has it followed (follow.go), its id in the mcpq task's
// checkpoint so a takeover follows the same upstream task.
package upstream
