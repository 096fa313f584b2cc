package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestDevStopsWithItsWorker: a worker that cannot run (here it serves a
// queue no tool is on) stops `mcpq dev` with the worker's error, rather
// than leaving a front end up whose calls would never run.
func TestDevStopsWithItsWorker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := runDev(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)),
		[]string{"--addr", "127.0.0.1:0", "--queues", "nosuch=1"})
	if ctx.Err() != nil {
		t.Fatalf("mcpq dev ran until its context ended (err %v); want it to stop with its worker", err)
	}
	if err == nil || !strings.Contains(err.Error(), "nothing to serve") {
		t.Fatalf("mcpq dev returned %v, want the worker's error", err)
	}
}
