// Package worker is how you write and serve tools for mcpq. A tool is a Go
// function that a worker runs as the job of a durable task: a client's
// tools/call creates the task on any front end, a worker of the tool's
// queue claims it, runs the handler step by step, and writes progress and
// the outcome back to the task's record in Redis. Many workers and front
// ends share one Redis; workers publish their tools to it, so a new worker
// with new tools needs no front-end deploy. docs/tools.md is the guide;
// examples/hello is a complete worker in one file.
//
// # Typed tools
//
// [NewTool] makes a tool from a typed handler. Its inputSchema is inferred
// from the argument type In (the json tag names a property, omitempty makes
// it optional, a jsonschema tag describes it, an mcpq tag adds bounds and
// enums), and every front end checks a call's arguments against it before a
// task exists: the handler gets arguments that satisfy the schema.
//
//	type ResizeArgs struct {
//		URL   string `json:"url" jsonschema:"the image to resize" mcpq:"format=uri"`
//		Width int    `json:"width" mcpq:"minimum=16,maximum=4096"`
//	}
//
//	type Resized struct {
//		URL    string `json:"url"`
//		Height int    `json:"height"`
//	}
//
//	resize := worker.NewTool("resize", "Resizes an image.",
//		func(ctx context.Context, c *worker.Call, in ResizeArgs) (Resized, error) {
//			var out Resized
//			err := c.Step(ctx, func(ctx context.Context) error {
//				var err error
//				out, err = resizeImage(ctx, in.URL, in.Width) // your code, honouring ctx
//				return err
//			})
//			return out, err
//		})
//	resize.TTL = 2 * time.Hour
//
// Set the other [Tool] fields (Title, Policy, TTL, PollInterval, Queue,
// Price) on the result. A plain Tool with a hand-written InputSchema and a
// [Handler] works too; [Call.Bind] decodes its arguments.
//
// # Results and errors
//
// A struct (or map) result is answered as structuredContent plus one text
// block of the same JSON, and the tool's outputSchema is inferred from it;
// a string is one text block; a *proto.CallToolResult is answered as is,
// for images, audio and several blocks ([TextResult] and [ErrorResult] make
// the simple ones). What the handler returns decides how the task ends:
//
//   - a result: completed;
//   - a plain error: completed, as a tool error (isError) with the error's
//     text, which the model can read and act on;
//   - a *proto.Error: failed, with that JSON-RPC error (a panic fails the
//     task with -32603 and is logged);
//   - [ErrCancelled], which [Call.Step] returns once a cancel was asked
//     for: cancelled.
//
// A result block too large for the task record (over
// [BlobConfig.InlineMaxBytes], 256 KiB) goes to the object store of
// [Config.Blobs] and is replaced by a resource_link the client reads
// back; the handler returns it as usual (docs/tools.md, "Large results").
//
// # Steps and cancellation
//
// [Call.Step] runs one unit of work. Before it the runtime heartbeats and
// checks the task's cancel flag and TTL; the step's context is cancelled
// the moment a tasks/cancel reaches the worker, and Step then returns
// [ErrCancelled]: return it as is. Honour the context inside a step ([Sleep],
// I/O with ctx). Step is also a fence: once the task was taken back from a
// delivery (its worker was paused or cut off and came back), that
// delivery's next Step returns before running its function, so work with
// side effects is not done twice. A step costs one Redis round trip: make
// steps units of real work, not the turns of a tight loop.
//
// # Progress
//
// [Call.Progress] sets the task's statusMessage, which tasks/get and every
// listener see. [Call.ReportProgress] also sends notifications/progress to
// a caller still waiting on the call with a progressToken, and [Call.Log]
// sends it log messages.
//
// # Input
//
// [Elicit] asks the user for a form inferred from a struct type and decodes
// the answer (accept, decline and cancel told apart); [Call.Sample] asks
// the client's model, [Call.ListRoots] its roots, and [Call.Input] several
// at once. While the answer is not there, they return an error the handler
// returns as is: the task moves to input_required, its job ends and holds
// no worker slot, and the handler runs again from the start once the
// client answered, when the same call returns the answer. Keys name a
// question for the task's life. Asking for a kind the client did not
// declare returns a -32021 error before anything is asked. Give a task that
// waits for a person a TTL to match, or call [Call.ExtendTTL] first.
// [Call.HoldInput] asks the same way but waits for the answers in the same
// delivery, its slot held, for a handler that must keep something open
// meanwhile (an upstream MCP session, package worker/upstream).
//
// # Checkpoints
//
// A handler runs again from the start after its input was answered and
// after its worker was lost (the task is taken back and delivered again
// within seconds). [Call.SaveCheckpoint] stores any JSON value in the task
// record; [Call.LoadCheckpoint] reads it back on the next run, so what is
// done is not done again. A stale delivery's writes are refused.
//
// # Policies, lifetimes and prices
//
// A tool's [Policy] decides whether a call becomes a task: [PolicyAuto]
// (the default) waits up to the tool's SyncBudget (the front end's
// --sync-budget, 0.5 s, unless the tool sets one) and
// answers the plain result when the tool finished by then, a task
// otherwise; [PolicyTask] always makes a task; [PolicySync] never does (the
// caller waits). TTL is how long the task lives from its creation, result
// included; PollInterval is the polling interval clients are told. A Price
// makes a call reserve its ceiling where billing is on; [Call.Meter]
// reports the usage it is charged (docs/billing.md).
//
// # Testing
//
// Package [github.com/mcpq/mcpq/mcpqtest] runs a real worker on an embedded
// Redis, with no Redis server: New serves the tools, Call creates a task as
// a front end does, and the Run it returns answers input, cancels, expires
// the task or loses its worker, and waits for the result.
//
//	env := mcpqtest.New(t, resize)
//	res := env.Call(t, "resize", ResizeArgs{URL: "https://example.com/a.png", Width: 64}).Result(t)
//
// # Running a worker
//
// [New] makes a [Worker] from a [Config] (only Redis is required; every
// other zero value is a documented default) and the tools; [Worker.Run]
// serves them until its context ends, then stops taking jobs, gives
// running ones [Config.ShutdownTimeout] (10 s) and puts the rest back in
// their queue. [Worker.Ready] says when it takes jobs; [Worker.Handler]
// serves /metrics, /healthz and /readyz. Prompts, resources and completions
// are served the same way ([Worker.AddPrompt], [Worker.AddResource],
// [Worker.SetCompleter]), and package [github.com/mcpq/mcpq/worker/command]
// serves programs in any language as tools.
//
// Each tool's jobs go to its Queue ([DefaultQueue] when it names none). A
// worker serves the queues its tools name, or those of [Config.Queues],
// each with its own concurrency, so GPU tools can have GPU machines to
// themselves (docs/tools.md, "Queues and live workers"). `mcpq worker` is
// this package with mcpq's own tools compiled in.
package worker
