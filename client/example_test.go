package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/worker"
)

// RenderArgs are the arguments of the render tool below.
type RenderArgs struct {
	Frames int `json:"frames" mcpq:"minimum=1,maximum=100"`
}

// CallTool answers either a result (the call finished at once) or a task,
// whose Handle follows it to its end. The render tool below is always a
// task (PolicyTask).
func ExampleClient_CallTool() {
	render := worker.NewTool("render", "Renders frames.",
		func(ctx context.Context, c *worker.Call, in RenderArgs) (string, error) {
			for i := range in.Frames {
				if err := c.Progress(ctx, fmt.Sprintf("Rendered frame %d of %d", i+1, in.Frames)); err != nil {
					return "", err
				}
			}
			return fmt.Sprintf("%d frames", in.Frames), nil
		})
	render.Policy = worker.PolicyTask
	url, stop := serveMCPQ(render)
	defer stop()

	c := &client.Client{URL: url, Tasks: true} // Tasks: the server may answer with a task
	ctx := context.Background()
	a, err := c.CallTool(ctx, "render", map[string]any{"frames": 3})
	if err != nil {
		panic(err)
	}
	if a.Result != nil {
		fmt.Println("answered at once:", a.Result.Content[0].Text)
		return
	}
	fmt.Println("task:", a.Task.Status)
	res, err := a.Handle.Wait(ctx) // what a synchronous call would have answered
	if err != nil {
		panic(err)
	}
	fmt.Println("result:", res.Content[0].Text)
	// Output:
	// task: working
	// result: 3 frames
}

// serveMCPQ runs mcpq in this process, a worker serving tools and a front
// end on an embedded Redis, and returns its MCP URL and the func that
// stops it all.
func serveMCPQ(tools ...worker.Tool) (url string, stop func()) {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	quiet := slog.New(slog.DiscardHandler)
	w, err := worker.New(worker.Config{Redis: rdb, Logger: quiet}, tools...)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	select {
	case <-w.Ready():
	case err := <-ran:
		panic(err)
	}
	fe, err := frontend.New(frontend.Config{Redis: rdb, Logger: quiet})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(fe.Handler())
	return srv.URL + "/mcp", func() {
		srv.Close()
		fe.Close()
		cancel()
		<-ran
		rdb.Close()
		mr.Close()
	}
}
