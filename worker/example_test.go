package worker_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpq/mcpq/internal/exampletest"
	"github.com/mcpq/mcpq/mcpqtest"
	"github.com/mcpq/mcpq/worker"
)

// ResizeArgs are the arguments of the resize tool below. The json tags name
// the properties (omitempty: optional), jsonschema tags describe them, and
// mcpq tags add bounds and enums.
type ResizeArgs struct {
	URL   string `json:"url" jsonschema:"the image to resize" mcpq:"format=uri"`
	Width int    `json:"width" jsonschema:"target width in pixels" mcpq:"minimum=16,maximum=4096"`
	Mode  string `json:"mode,omitempty" mcpq:"enum=fit|fill"`
}

// Resized is resize's structured result.
type Resized struct {
	URL   string `json:"url"`
	Width int    `json:"width"`
}

// NewTool infers the tool's inputSchema from its argument type (and its
// outputSchema from a struct result type); every front end checks a call's
// arguments against it before a task exists.
func ExampleNewTool() {
	resize := worker.NewTool("resize", "Resizes an image.",
		func(ctx context.Context, c *worker.Call, in ResizeArgs) (Resized, error) {
			if err := c.Progress(ctx, "Resizing "+in.URL); err != nil {
				return Resized{}, err
			}
			return Resized{URL: in.URL + "?w=" + fmt.Sprint(in.Width), Width: in.Width}, nil
		})
	fmt.Println(string(resize.InputSchema))
	// Output:
	// {"type":"object","properties":{"url":{"type":"string","description":"the image to resize","format":"uri"},"width":{"type":"integer","description":"target width in pixels","minimum":16,"maximum":4096},"mode":{"type":"string","enum":["fit","fill"]}},"required":["url","width"],"additionalProperties":false}
}

// Approval is the form the deploy tool below asks a person to fill in.
type Approval struct {
	Approve bool   `json:"approve" jsonschema:"roll the build out to production"`
	Note    string `json:"note,omitempty" jsonschema:"a note for the change log"`
}

// Elicit asks the client for a form inferred from Approval. Until the answer
// is there it returns an error the handler returns as is: the task waits in
// input_required, holding no worker slot, and the handler runs again from the
// start once the client answered, when Elicit returns the answer.
func ExampleElicit() {
	deploy := worker.NewTool("deploy", "Deploys a service once a person approves.",
		func(ctx context.Context, c *worker.Call, in struct{}) (string, error) {
			ok, err := worker.Elicit[Approval](ctx, c, "approve", "Roll billing 1.4.2 out?")
			if err != nil {
				return "", err
			}
			if !ok.Accepted() || !ok.Content.Approve {
				return "", errors.New("not approved")
			}
			return "rolled out: " + ok.Content.Note, nil
		})

	t := exampletest.New() // in a test: the test's t
	defer t.End()
	env := mcpqtest.New(t, deploy)
	run := env.Call(t, "deploy", nil)
	asked := run.Input(t)["approve"] // waits for input_required
	fmt.Println(run.State(t).Status, asked.Method)
	run.Accept(t, "approve", Approval{Approve: true, Note: "friday"})
	fmt.Println(run.Result(t).Content[0].Text)
	fmt.Println("handler runs:", len(run.Deliveries()))
	// Output:
	// input_required elicitation/create
	// rolled out: friday
	// handler runs: 2
}
