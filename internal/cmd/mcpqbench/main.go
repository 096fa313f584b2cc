// Command mcpqbench runs mcpq's side-by-side benchmarks (see
// docs/benchmarks.md; scripts/bench starts a fresh redis-server and runs
// it). "mcpqbench serve ROLE" is how it runs the servers under test as its
// own child processes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpq/mcpq/internal/bench"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "serve" {
		if err := bench.Serve(os.Args[2], os.Args[3:]); err != nil {
			fmt.Fprintf(os.Stderr, "mcpqbench serve %s: %v\n", os.Args[2], err)
			os.Exit(1)
		}
		return
	}
	// Die with the script that started us (its trap stops redis-server).
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0)
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "mcpqbench: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg bench.Config
	fs := flag.NewFlagSet("mcpqbench", flag.ExitOnError)
	fs.StringVar(&cfg.RedisURL, "redis", "", "URL of a fresh redis-server the run may flush (required)")
	conc := fs.String("c", "1,16,64", "load generator concurrencies")
	fs.DurationVar(&cfg.Warmup, "warmup", 500*time.Millisecond, "warm-up before each measured window")
	fs.DurationVar(&cfg.Duration, "duration", 2*time.Second, "measured window of each throughput figure")
	fs.IntVar(&cfg.Rounds, "rounds", 3, "rounds of groups 1-5 per concurrency; they report the medians of the rounds")
	fs.IntVar(&cfg.WorkerJobs, "worker-jobs", 20000, "jobs drained per worker-throughput figure (per round)")
	fs.IntVar(&cfg.Listeners, "listeners", 1000, "open subscriptions/listen streams for the notification figure")
	fs.IntVar(&cfg.NotifyRate, "notify-rate", 1000, "state changes per second while timing notifications")
	fs.IntVar(&cfg.CancelTrials, "cancel-trials", 40, "cancels timed per cancel-latency figure")
	fs.IntVar(&cfg.LiveSmall, "live-small", 10_000, "live tasks at the small tasks/get point")
	fs.IntVar(&cfg.LiveLarge, "live-large", 1_000_000, "live tasks at the large tasks/get point (0 skips it)")
	fs.IntVar(&cfg.MemTasks, "mem-tasks", 10_000, "tasks created for the bytes-per-task figure")
	fs.StringVar(&cfg.Profile, "profile", "", "directory for pprof profiles of create, tasks/get and the worker (none when empty)")
	fs.BoolVar(&cfg.Billing, "billing", false, "front end with billing on and the noop tool priced (docs/billing.md)")
	fs.IntVar(&cfg.CostTasks, "cost-tasks", 2000, "cost group: sync calls, floor lives and in-process creates per figure")
	fs.IntVar(&cfg.CostJobs, "cost-jobs", 5000, "cost group: jobs per worker drain")
	fs.StringVar(&cfg.Baseline, "baseline", "b42a15a", "cost group: the commit the front end is compared with (its name)")
	fs.StringVar(&cfg.BaselineExe, "baseline-exe", "", "cost group: that commit's harness binary (scripts/bench builds it)")
	fs.StringVar(&cfg.FrontendTest, "frontend-test", "", "cost group: this commit's frontend test binary (go test -c ./frontend)")
	fs.StringVar(&cfg.BaselineFrontendTest, "baseline-frontend-test", "", "cost group: the baseline commit's frontend test binary")
	only := fs.String("only", "", "comma-separated groups to run (1..12, cost; default all)")
	out := fs.String("out", "", "write the report as JSON to this file")
	md := fs.String("markdown", "", "also write the table as Markdown to this file")
	limit := fs.Duration("limit", 10*time.Minute, "abort measurements still running after this long")
	_ = fs.Parse(os.Args[1:])
	if cfg.Rounds < 1 {
		return fmt.Errorf("-rounds must be at least 1")
	}
	if cfg.RedisURL == "" {
		return fmt.Errorf("-redis is required (scripts/bench starts a fresh redis-server)")
	}
	for _, f := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-c: bad concurrency %q", f)
		}
		cfg.Concurrency = append(cfg.Concurrency, n)
	}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *limit)
	defer cancel()
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	rep.Print(os.Stdout)
	if *out != "" {
		if err := rep.WriteJSON(*out); err != nil {
			return err
		}
		fmt.Printf("wrote %s\n", *out)
	}
	if *md != "" {
		f, err := os.Create(*md)
		if err != nil {
			return err
		}
		rep.Markdown(f)
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Printf("wrote %s\n", *md)
	}
	return nil
}
