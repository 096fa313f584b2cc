package command

import (
	"fmt"
	"log/slog"

	"github.com/mcpq/mcpq/worker"
)

// LoadFiles reads several tools files (`mcpq worker --tools a.yaml,b.yaml`,
// or the flag repeated) and returns their tools in file order, so one
// worker fleet can serve several tool families. A tool name declared in
// two files is an error naming both files.
func LoadFiles(paths []string, log *slog.Logger) ([]worker.Tool, error) {
	var all []worker.Tool
	from := map[string]string{}
	for _, p := range paths {
		tools, err := Load(p, log)
		if err != nil {
			return nil, err
		}
		for _, t := range tools {
			if first, ok := from[t.Name]; ok {
				return nil, fmt.Errorf("%s: tool %q is declared in %s too (a tool name is unique across tools files)", p, t.Name, first)
			}
			from[t.Name] = p
			all = append(all, t)
		}
	}
	return all, nil
}
