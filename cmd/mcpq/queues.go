package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpq/mcpq/internal/queue"
	"github.com/mcpq/mcpq/worker"
)

// queueFlags registers the worker's queue and catalog flags, defaulted
// from the environment. A bad MCPQ_QUEUES or MCPQ_TOOL_QUEUES stops the
// process: serving the wrong queues would take jobs meant for other
// machines.
func queueFlags(fs *flag.FlagSet, cfg *worker.Config) {
	fs.StringVar(&cfg.Name, "worker-name", env("MCPQ_WORKER_NAME", ""),
		"this worker's name in task timelines and the operator view (env MCPQ_WORKER_NAME; default: host name and process id)")
	envFunc(fs, "queues", "MCPQ_QUEUES",
		`queues to serve and their concurrency, like gpu=2,cpu=8 (env MCPQ_QUEUES; default: every queue the tools name, sharing --concurrency)`,
		func(v string) (err error) { cfg.Queues, err = parseQueues(v); return err })
	envFunc(fs, "tool-queues", "MCPQ_TOOL_QUEUES",
		`put tools on queues by name, like render_gif=gpu,*=cpu (* for every entry that names no queue); every worker of a deployment needs the same (env MCPQ_TOOL_QUEUES)`,
		func(v string) (err error) { cfg.ToolQueues, err = parseToolQueues(v); return err })
	envFunc(fs, "max-running-per-principal", "MCPQ_MAX_RUNNING_PER_PRINCIPAL",
		`a hard cap on each principal's tasks running on a queue at once across all workers, like 4 (every queue) or gpu=1,*=4; a job over it waits in line without polling and runs when one of the principal's tasks there ends; without it a queue is still fair, a free slot going to the waiting principal with the fewest running (env MCPQ_MAX_RUNNING_PER_PRINCIPAL; default: no cap; every worker needs the same)`,
		func(v string) (err error) { cfg.MaxRunningPerPrincipal, err = parseShares(v); return err })
	fs.DurationVar(&cfg.BusyDelay, "busy-delay", envDuration("MCPQ_BUSY_DELAY", time.Second),
		"how long a job over its principal's share waits before it is tried again (env MCPQ_BUSY_DELAY)")
	fs.DurationVar(&cfg.CatalogInterval, "catalog-interval", envDuration("MCPQ_CATALOG_INTERVAL", 5*time.Second),
		fmt.Sprintf("how often the worker heartbeats the tools it serves; a dead worker's tools leave tools/list within %d intervals (env MCPQ_CATALOG_INTERVAL)", worker.ServedIntervals))
}

// envFunc registers a flag parsed by set, first applied to the
// environment variable envName when set.
func envFunc(fs *flag.FlagSet, name, envName, usage string, set func(string) error) {
	fs.Func(name, usage, set)
	if v := os.Getenv(envName); v != "" {
		if err := set(v); err != nil {
			fmt.Fprintf(os.Stderr, "mcpq: %s=%q: %v\n", envName, v, err)
			os.Exit(2)
		}
	}
}

// parseQueues reads "gpu=2,cpu=8".
func parseQueues(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, item := range splitList(v) {
		name, n, ok := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return nil, fmt.Errorf("%q is not queue=concurrency (like gpu=2)", item)
		}
		if err := checkQueueName(name); err != nil {
			return nil, err
		}
		c, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || c < 1 {
			return nil, fmt.Errorf("queue %s: concurrency %q is not a whole number above 0", name, n)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("queue %s given twice", name)
		}
		out[name] = c
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no queue given (like gpu=2,cpu=8)")
	}
	return out, nil
}

// shardsFlag registers --queue-shards, defaulted from MCPQ_QUEUE_SHARDS:
// "gpu=4,cpu=2", or the flag repeated (--queue-shards gpu=4 --queue-shards
// cpu=2); a queue given twice takes its last count. A bad value in the
// environment stops the process: a front end and workers that disagree
// on a queue's shards spread its jobs over shards some workers do not
// serve until they restart (docs/deploy.md, "Queue shards").
func shardsFlag(fs *flag.FlagSet, shards *map[string]int) {
	set := func(v string) error {
		add, err := parseShards(v)
		if err != nil {
			return err
		}
		if *shards == nil {
			*shards = map[string]int{}
		}
		maps.Copy(*shards, add)
		return nil
	}
	envFunc(fs, "queue-shards", "MCPQ_QUEUE_SHARDS",
		fmt.Sprintf(`split queues into shards, like gpu=4 (comma-separated or the flag repeated; 1 to %d): each shard is its own asynq queue on its own Redis Cluster slot, so one queue's work spreads over the cluster's primaries; front ends and workers need the same (env MCPQ_QUEUE_SHARDS; docs/deploy.md "Queue shards")`, queue.MaxShards),
		set)
}

// parseShards reads "gpu=4,cpu=2".
func parseShards(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, item := range splitList(v) {
		name, n, ok := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return nil, fmt.Errorf("%q is not queue=shards (like gpu=4)", item)
		}
		if err := checkQueueName(name); err != nil {
			return nil, err
		}
		c, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || c < 1 || c > queue.MaxShards {
			return nil, fmt.Errorf("queue %s: shards %q is not a whole number from 1 to %d", name, n, queue.MaxShards)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("queue %s given twice", name)
		}
		out[name] = c
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no queue given (like gpu=4)")
	}
	return out, nil
}

// parseToolQueues reads "render_gif=gpu,*=cpu".
func parseToolQueues(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range splitList(v) {
		tool, queue, ok := strings.Cut(item, "=")
		tool, queue = strings.TrimSpace(tool), strings.TrimSpace(queue)
		if !ok || tool == "" {
			return nil, fmt.Errorf("%q is not tool=queue (like render_gif=gpu)", item)
		}
		if err := checkQueueName(queue); err != nil {
			return nil, fmt.Errorf("tool %s: %w", tool, err)
		}
		if _, dup := out[tool]; dup {
			return nil, fmt.Errorf("tool %s given twice", tool)
		}
		out[tool] = queue
	}
	return out, nil
}

// parseShares reads "4" (every queue) or "gpu=1,*=4" ("*": queues not
// named); 0 means no share.
func parseShares(v string) (map[string]int, error) {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		if n < 0 {
			return nil, fmt.Errorf("share %d is below 0", n)
		}
		return map[string]int{"*": n}, nil
	}
	out := map[string]int{}
	for _, item := range splitList(v) {
		name, n, ok := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return nil, fmt.Errorf("%q is not queue=number (like gpu=1, or *=4 for every other queue)", item)
		}
		if name != "*" {
			if err := checkQueueName(name); err != nil {
				return nil, err
			}
		}
		c, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || c < 0 {
			return nil, fmt.Errorf("queue %s: share %q is not a whole number of 0 or more", name, n)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("queue %s given twice", name)
		}
		out[name] = c
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no share given (like 4, or gpu=1,*=4)")
	}
	return out, nil
}

// checkQueueName allows letters, digits and "_-.": a queue name goes into
// Redis key names and log lines.
func checkQueueName(name string) error {
	if name == "" {
		return fmt.Errorf("empty queue name")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.", r)) {
			return fmt.Errorf("queue name %q: only letters, digits, _ - . are allowed", name)
		}
	}
	return nil
}
