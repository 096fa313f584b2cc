// Package e2e holds mcpq's end-to-end tests: they build the mcpq binary and
// drive it as separate processes (mcpq dev; mcpq frontend and mcpq worker
// on a real redis-server) through the Go client, as a user would.
package e2e
