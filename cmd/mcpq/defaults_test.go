package main

import (
	"testing"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/taskstate"
	"github.com/mcpq/mcpq/worker"
)

// TestSharedDefaults: the defaults front ends, workers, the queue and the
// task store must agree on are the same wherever a package states its own.
func TestSharedDefaults(t *testing.T) {
	if frontend.DefaultMaxTTL != worker.DefaultMaxTTL || queue.DefaultMaxTTL != worker.DefaultMaxTTL {
		t.Errorf("max TTL: frontend %v, worker %v, queue %v", frontend.DefaultMaxTTL, worker.DefaultMaxTTL, queue.DefaultMaxTTL)
	}
	if worker.DefaultLostAfter != taskstate.DefaultLostAfter {
		t.Errorf("lost after: worker %v, taskstate %v", worker.DefaultLostAfter, taskstate.DefaultLostAfter)
	}
	if worker.DefaultPrefix != taskstate.DefaultPrefix {
		t.Errorf("prefix: worker %q, taskstate %q", worker.DefaultPrefix, taskstate.DefaultPrefix)
	}
}
