package conformance

import (
	"context"

	"github.com/mcpq/mcpq/worker"
)

// Register adds the whole pack (tools, prompts, resources, completions) to w.
func Register(ctx context.Context, w *worker.Worker) error {
	for _, t := range Tools() {
		if err := w.AddTool(ctx, t); err != nil {
			return err
		}
	}
	return nil
}
