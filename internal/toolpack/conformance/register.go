package conformance

import (
	"context"
	"fmt"

	"github.com/mcpq/mcpq/worker"
)

// Register adds the whole pack to w: the Tasks fixtures (Tools and
// InputTools), the core tool fixtures, the MRTR fixtures, the 2025-11-25
// input fixtures, the prompts, the
// resources and resource template, and the completion handler. It also
// starts announcing test://watched-resource as updated every 3 seconds
// until ctx is done, so ctx should live as long as the worker serves.
func Register(ctx context.Context, w *worker.Worker) error {
	var tools []worker.Tool
	tools = append(tools, Tools()...)
	tools = append(tools, InputTools()...)
	tools = append(tools, coreTools()...)
	tools = append(tools, mrtrTools()...)
	tools = append(tools, legacyTools()...)
	for _, t := range tools {
		if err := w.AddTool(ctx, t); err != nil {
			return err
		}
	}
	for _, p := range prompts() {
		if err := w.AddPrompt(ctx, p); err != nil {
			return fmt.Errorf("prompt %s: %w", p.Prompt.Name, err)
		}
	}
	for _, r := range resources() {
		if err := w.AddResource(ctx, r); err != nil {
			return fmt.Errorf("resource %s: %w", r.Resource.URI, err)
		}
	}
	for _, t := range templates() {
		if err := w.AddResourceTemplate(ctx, t); err != nil {
			return fmt.Errorf("resource template %s: %w", t.Template.URITemplate, err)
		}
	}
	if err := w.SetCompleter(ctx, complete); err != nil {
		return err
	}
	go announceWatched(ctx, w)
	return nil
}
