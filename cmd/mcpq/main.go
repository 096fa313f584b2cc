// Command mcpq is the one mcpq binary: `mcpq dev` runs the whole system in
// one process on an embedded Redis; `mcpq frontend` and `mcpq worker` run
// the real processes against REDIS_URL. It is the only reader of
// environment variables and flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

const usage = `mcpq: durable MCP tasks on Redis

Usage:
  mcpq dev       [--addr 127.0.0.1:8080] [--fixtures conformance]   everything in one process, embedded Redis
  mcpq frontend  [--addr :8080]                                      the stateless MCP front end (REDIS_URL)
  mcpq worker    [--fixtures conformance] [--tools FILE[,FILE]] [--concurrency 10]  a worker running tools (REDIS_URL)
                 [--queues gpu=2,cpu=8] [--tool-queues render_gif=gpu,*=cpu]
  mcpq keys      create PRINCIPAL | list | revoke ID                  managed API keys (REDIS_URL)
  mcpq principals map FROM TO | unmap FROM | list                    OAuth principal FROM acts as TO (REDIS_URL)
  mcpq accounts  credit PRINCIPAL AMOUNT | show PRINCIPAL | ledger PRINCIPAL [--limit N] [--cursor C]
                                                                     billing accounts (REDIS_URL; docs/billing.md)
  mcpq call      TOOL [key=value ...] [--json ARGS] [--detach]        call a tool, follow its task, print the result
  mcpq task      ls [--status S] [--limit N]                          your tasks (MCPQ_URL, MCPQ_API_KEY)
                 get|watch|cancel ID | answer ID [key=JSON ...]       one task
  mcpq resume                                                         re-attach to every journaled task
  mcpq login     [--server URL] [--no-browser]                        OAuth sign-in for the client commands
  mcpq conformance-client URL                                         the client the MCP conformance suite drives

Run "mcpq COMMAND -h" for a command's flags and environment variables.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "call", "task", "resume", "login", "conformance-client":
		// Client commands handle Ctrl-C themselves (cancel or detach).
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		var err error
		switch args := os.Args[2:]; os.Args[1] {
		case "call":
			err = runCall(ctx, args)
		case "task":
			err = runTask(ctx, args)
		case "resume":
			err = runResume(ctx, args)
		case "login":
			err = runLogin(ctx, args)
		case "conformance-client":
			err = runConformanceClient(ctx, args)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "mcpq %s: %v\n", os.Args[1], err)
			stop()
			os.Exit(1)
		}
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "dev":
		err = runDev(ctx, log, args)
	case "frontend":
		err = runFrontend(ctx, log, args)
	case "worker":
		err = runWorker(ctx, log, args)
	case "keys":
		err = runKeys(ctx, args)
	case "accounts":
		err = runAccounts(ctx, args)
	case "principals":
		err = runPrincipals(ctx, args)
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "mcpq: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Error("mcpq failed", "err", err)
		os.Exit(1)
	}
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("MCPQ_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}
