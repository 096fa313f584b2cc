// Command hello is a complete mcpq worker serving one typed tool (docs/tools.md).
package main

import (
	"context"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/worker"
)

type Host struct {
	Name string `json:"name" jsonschema:"the host name to resolve" mcpq:"minLength=1,maxLength=253"`
}

var lookup = worker.NewTool("lookup", "Resolves a host name to its IP addresses.",
	func(ctx context.Context, c *worker.Call, in Host) ([]string, error) {
		return net.DefaultResolver.LookupHost(ctx, in.Name) // ctx ends if the task is cancelled
	})

func main() {
	opts, err := redis.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal("REDIS_URL: ", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w, err := worker.New(worker.Config{Redis: redis.NewClient(opts)}, lookup)
	if err == nil {
		err = w.Run(ctx) // until SIGINT or SIGTERM; running jobs then get 10 s to finish
	}
	if err != nil {
		log.Fatal(err)
	}
}
