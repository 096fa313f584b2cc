package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// InputTools returns the Tasks fixtures that ask for input: confirm_delete
// and multi_input park their task in input_required until tasks/update
// answers; test_tool_with_task gathers its input by MRTR before it becomes
// a task (tasks-mrtr-input, tasks-dispatch-and-envelope and
// tasks-mrtr-composition call them).
func InputTools() []worker.Tool {
	return []worker.Tool{
		{
			Name:         "confirm_delete",
			Description:  "Always a task: asks the user (one elicitation) to confirm deleting a file, then reports what it did.",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string","description":"The file to delete"}},"required":["filename"]}`),
			Policy:       worker.PolicyTask,
			PollInterval: 500 * time.Millisecond,
			Handler:      confirmDelete,
		},
		{
			Name:         "multi_input",
			Description:  "Always a task: asks for a name and a confirmation at once (two elicitations), then greets.",
			InputSchema:  json.RawMessage(`{"type":"object"}`),
			Policy:       worker.PolicyTask,
			PollInterval: 500 * time.Millisecond,
			Handler:      multiInput,
		},
		{
			Name:        "test_tool_with_task",
			Description: "Always a task: first asks for the user's name in the request (MRTR), then works about 1.5 s as a task whose result greets them.",
			InputSchema: json.RawMessage(`{"type":"object"}`),
			Policy:      worker.PolicyTask,
			// Input asked within the budget is gathered by MRTR before the
			// task is handed out; the work after it outlasts the budget.
			SyncBudget:   500 * time.Millisecond,
			PollInterval: 500 * time.Millisecond,
			Handler:      toolWithTask,
		},
	}
}

func confirmDelete(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	var a struct {
		Filename string `json:"filename"`
	}
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	if a.Filename == "" {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid arguments: filename is required")
	}
	answers, err := ask(ctx, c, map[string]proto.InputRequest{
		"confirm": elicit(fmt.Sprintf("Delete %s?", a.Filename), confirmSchema),
	})
	if err != nil {
		return nil, err
	}
	ans, err := decodeElicit(answers, "confirm")
	if err != nil {
		return nil, err
	}
	if ans.accepted() && ans.boolean("confirm") {
		return worker.TextResult("Deleted " + a.Filename), nil
	}
	return worker.TextResult("Kept " + a.Filename), nil
}

func multiInput(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	answers, err := ask(ctx, c, map[string]proto.InputRequest{
		"name":    elicit("What is your name?", nameSchema),
		"confirm": elicit("Shall I greet you?", confirmSchema),
	})
	if err != nil {
		return nil, err
	}
	name, err := decodeElicit(answers, "name")
	if err != nil {
		return nil, err
	}
	confirm, err := decodeElicit(answers, "confirm")
	if err != nil {
		return nil, err
	}
	who := name.str("name")
	if !name.accepted() || who == "" {
		who = "stranger"
	}
	if !confirm.accepted() || !confirm.boolean("confirm") {
		return worker.TextResult(fmt.Sprintf("Not greeting %s: not confirmed", who)), nil
	}
	return worker.TextResult(fmt.Sprintf("Hello, %s! (both inputs received)", who)), nil
}

// taskWork is how long test_tool_with_task works after its input.
const taskWork = 1500 * time.Millisecond

func toolWithTask(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	answers, err := ask(ctx, c, map[string]proto.InputRequest{
		"user_name": elicit("What is your name?", nameSchema),
	})
	if err != nil {
		return nil, err
	}
	ans, err := decodeElicit(answers, "user_name")
	if err != nil {
		return nil, err
	}
	name := ans.str("name")
	if !ans.accepted() || name == "" {
		name = "stranger"
	}
	if err := c.Progress(ctx, "Preparing a greeting for "+name); err != nil {
		return nil, err
	}
	if err := c.Step(ctx, func(ctx context.Context) error { return worker.Sleep(ctx, taskWork) }); err != nil {
		return nil, err
	}
	return worker.TextResult(fmt.Sprintf("Hello, %s! (from a task)", name)), nil
}
