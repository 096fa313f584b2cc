// Package worker runs MCP tools as the jobs of durable tasks. A Worker is an
// asynq server: it publishes its tool catalog to Redis, claims each job's
// task record, runs the tool's handler step by step, and writes progress and
// the outcome back to the record. Between steps the runtime heartbeats,
// checks the task's cancel flag and TTL, and a step's context is cancelled
// promptly through the task's pub/sub channel when tasks/cancel arrives.
//
// NewTool makes a typed tool: its input (and output) schema is inferred
// from Go types, every front end validates arguments against it before a
// task exists, and a struct result becomes structuredContent. Elicit,
// Call.Sample and Call.ListRoots ask the client for typed input. Package
// mcpqtest tests a tool without a Redis server; docs/tools.md is the guide.
package worker
