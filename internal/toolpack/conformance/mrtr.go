package conformance

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// The input_required (MRTR) fixtures of the input-required-result-*
// scenarios. Each asks with worker.Call.Input; the front end answers the
// request with an InputRequiredResult carrying an integrity-protected
// requestState, and the retry's inputResponses reach the same task, whose
// handler then runs again from the start with the answers. requestState
// integrity (request_state, tampered_state) is the front end's: by the time
// a handler sees answers, the state was verified.

// mrtrTools are the MRTR tool fixtures.
func mrtrTools() []worker.Tool {
	tool := func(suffix, desc string, h worker.Handler) worker.Tool {
		return worker.Tool{Name: "test_input_required_result_" + suffix, Description: desc,
			InputSchema: noArgs, Policy: worker.PolicySync, Handler: h}
	}
	return []worker.Tool{
		tool("elicitation", "MRTR: asks for the caller's name (elicitation, key user_name), then greets.", mrtrElicitation),
		tool("sampling", "MRTR: asks for an LLM completion (sampling, key capital_question), then quotes it.", mrtrSampling),
		tool("list_roots", "MRTR: asks for the client's roots (roots/list, key client_roots), then lists them.", mrtrListRoots),
		tool("request_state", "MRTR: asks for a confirmation; the retry's requestState is verified before it runs.", mrtrConfirm),
		tool("multiple_inputs", "MRTR: asks for a name, a completion and the roots in one round.", mrtrMultipleInputs),
		tool("multi_round", "MRTR: two rounds, a name (key step1) and then a colour (key step2).", mrtrMultiRound),
		tool("tampered_state", "MRTR: asks for a confirmation; a retry with a tampered requestState is rejected.", mrtrConfirm),
		tool("capabilities", "MRTR: asks only for input kinds the request's client capabilities cover.", mrtrCapabilities),
	}
}

func mrtrElicitation(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	answers, err := ask(ctx, c, map[string]proto.InputRequest{"user_name": elicit("What is your name?", nameSchema)})
	if err != nil {
		return nil, err
	}
	ans, err := decodeElicit(answers, "user_name")
	if err != nil {
		return nil, err
	}
	if !ans.accepted() {
		return worker.TextResult(fmt.Sprintf("No name given (%s).", ans.Action)), nil
	}
	name := ans.str("name")
	if name == "" {
		return nil, badAnswer("user_name", `content with a non-empty "name"`)
	}
	return worker.TextResult(fmt.Sprintf("Hello, %s!", name)), nil
}

func mrtrSampling(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	answers, err := ask(ctx, c, map[string]proto.InputRequest{
		"capital_question": sample("What is the capital of France?", 100),
	})
	if err != nil {
		return nil, err
	}
	text, err := decodeSampling(answers, "capital_question")
	if err != nil {
		return nil, err
	}
	return worker.TextResult("Sampling response: " + text), nil
}

func mrtrListRoots(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	answers, err := ask(ctx, c, map[string]proto.InputRequest{"client_roots": listRoots()})
	if err != nil {
		return nil, err
	}
	roots, err := decodeRoots(answers, "client_roots")
	if err != nil {
		return nil, err
	}
	return worker.TextResult(fmt.Sprintf("Client exposed %d root(s): %s", len(roots), rootURIs(roots))), nil
}

func rootURIs(roots []root) string {
	uris := make([]string, len(roots))
	for i, r := range roots {
		uris[i] = r.URI
	}
	return strings.Join(uris, ", ")
}

// mrtrConfirm serves request_state and tampered_state: the integrity of
// the requestState is checked by the front end before the answers get here.
func mrtrConfirm(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	answers, err := ask(ctx, c, map[string]proto.InputRequest{"confirm": elicit("Please confirm", okSchema)})
	if err != nil {
		return nil, err
	}
	ans, err := decodeElicit(answers, "confirm")
	if err != nil {
		return nil, err
	}
	return worker.TextResult(fmt.Sprintf("state-ok: requestState verified, confirmation %s (ok=%t)",
		ans.Action, ans.boolean("ok"))), nil
}

func mrtrMultipleInputs(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	answers, err := ask(ctx, c, map[string]proto.InputRequest{
		"user_name":    elicit("What is your name?", nameSchema),
		"greeting":     sample("Generate a greeting", 50),
		"client_roots": listRoots(),
	})
	if err != nil {
		return nil, err
	}
	name, err := decodeElicit(answers, "user_name")
	if err != nil {
		return nil, err
	}
	greeting, err := decodeSampling(answers, "greeting")
	if err != nil {
		return nil, err
	}
	roots, err := decodeRoots(answers, "client_roots")
	if err != nil {
		return nil, err
	}
	who := name.str("name")
	if !name.accepted() || who == "" {
		who = "stranger"
	}
	return worker.TextResult(fmt.Sprintf("%s %s — %d root(s) visible", greeting, who, len(roots))), nil
}

func mrtrMultiRound(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	answers, err := ask(ctx, c, map[string]proto.InputRequest{"step1": elicit("Step 1: What is your name?", nameSchema)})
	if err != nil {
		return nil, err
	}
	first, err := decodeElicit(answers, "step1")
	if err != nil {
		return nil, err
	}
	name := first.str("name")
	if !first.accepted() || name == "" {
		name = "someone"
	}
	// Round two asks a new key: keys are never reused in a task's life.
	answers, err = ask(ctx, c, map[string]proto.InputRequest{
		"step2": elicit(fmt.Sprintf("Step 2: What is your favorite color, %s?", name), colorSchema),
	})
	if err != nil {
		return nil, err
	}
	second, err := decodeElicit(answers, "step2")
	if err != nil {
		return nil, err
	}
	color := second.str("color")
	if !second.accepted() || color == "" {
		color = "no colour in particular"
	}
	return worker.TextResult(fmt.Sprintf("Multi-round complete: %s likes %s", name, color)), nil
}

// mrtrCapabilities asks only for what the creating request declared it
// can give; declaring none of them gets a plain result at once.
func mrtrCapabilities(ctx context.Context, c *worker.Call) (*proto.CallToolResult, error) {
	caps := c.Capabilities()
	reqs := map[string]proto.InputRequest{}
	if caps.Elicitation != nil {
		reqs["user_name"] = elicit("What is your name?", nameSchema)
	}
	if caps.Sampling != nil {
		reqs["greeting"] = sample("Generate a short greeting", 50)
	}
	if caps.Roots != nil {
		reqs["client_roots"] = listRoots()
	}
	if len(reqs) == 0 {
		return worker.TextResult("No declared client capability supports an input request; nothing asked."), nil
	}
	answers, err := ask(ctx, c, reqs)
	if err != nil {
		return nil, err
	}
	got := make([]string, 0, len(answers))
	for _, k := range []string{"user_name", "greeting", "client_roots"} {
		if _, ok := answers[k]; ok {
			got = append(got, k)
		}
	}
	return worker.TextResult("Capability-aware input requests fulfilled: " + strings.Join(got, ", ")), nil
}
