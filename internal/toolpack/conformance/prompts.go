package conformance

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// The prompt fixtures of the prompts-* and input-required-result-non-tool-request
// scenarios. A prompt handler's c.Arguments is the {name: value} object of
// the request (JSON null when it had none).

// prompts are the prompt fixtures.
func prompts() []worker.Prompt {
	return []worker.Prompt{
		{
			Prompt: proto.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt",
				Description: "A prompt without arguments."},
			Handler: simplePrompt,
		},
		{
			Prompt: proto.Prompt{Name: "test_prompt_with_arguments", Title: "Prompt With Arguments",
				Description: "A prompt that quotes its two arguments.",
				Arguments: []proto.PromptArgument{
					{Name: "arg1", Description: "First test argument", Required: true},
					{Name: "arg2", Description: "Second test argument", Required: true},
				}},
			Handler: promptWithArguments,
		},
		{
			Prompt: proto.Prompt{Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource",
				Description: "A prompt that embeds a text resource under the given URI.",
				Arguments: []proto.PromptArgument{
					{Name: "resourceUri", Description: "URI of the resource to embed", Required: true},
				}},
			Handler: promptWithEmbeddedResource,
		},
		{
			Prompt: proto.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image",
				Description: "A prompt that shows an image (a 1x1 red PNG)."},
			Handler: promptWithImage,
		},
		{
			Prompt: proto.Prompt{Name: "test_input_required_result_prompt", Title: "Prompt With Input",
				Description: "MRTR on prompts/get: asks for context (elicitation, key user_context), then renders it."},
			Handler: promptWithInput,
		},
	}
}

// promptArgs decodes a prompt's arguments object.
func promptArgs(c *worker.Call) (map[string]string, error) {
	var args map[string]string
	if len(c.Arguments) == 0 {
		return map[string]string{}, nil
	}
	if err := json.Unmarshal(c.Arguments, &args); err != nil {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid arguments: %v", err)
	}
	if args == nil {
		args = map[string]string{}
	}
	return args, nil
}

// userText is a user message with one text block.
func userText(text string) proto.PromptMessage {
	return proto.PromptMessage{Role: "user", Content: proto.TextContent(text)}
}

func simplePrompt(ctx context.Context, c *worker.Call) (*proto.GetPromptResult, error) {
	return &proto.GetPromptResult{Description: "A simple test prompt",
		Messages: []proto.PromptMessage{userText("This is a simple prompt for testing.")}}, nil
}

func promptWithArguments(ctx context.Context, c *worker.Call) (*proto.GetPromptResult, error) {
	args, err := promptArgs(c)
	if err != nil {
		return nil, err
	}
	return &proto.GetPromptResult{Description: "A prompt with arguments",
		Messages: []proto.PromptMessage{
			userText(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args["arg1"], args["arg2"])),
		}}, nil
}

func promptWithEmbeddedResource(ctx context.Context, c *worker.Call) (*proto.GetPromptResult, error) {
	args, err := promptArgs(c)
	if err != nil {
		return nil, err
	}
	uri := args["resourceUri"]
	if uri == "" {
		return nil, proto.NewError(proto.CodeInvalidParams, "Missing required argument: resourceUri")
	}
	return &proto.GetPromptResult{Description: "A prompt with an embedded resource",
		Messages: []proto.PromptMessage{
			{Role: "user", Content: embeddedText(uri, "text/plain", "Embedded resource content for testing.")},
			userText("Please process the embedded resource above."),
		}}, nil
}

func promptWithImage(ctx context.Context, c *worker.Call) (*proto.GetPromptResult, error) {
	return &proto.GetPromptResult{Description: "A prompt with an image",
		Messages: []proto.PromptMessage{
			{Role: "user", Content: imageContent()},
			userText("Please analyze the image above."),
		}}, nil
}

func promptWithInput(ctx context.Context, c *worker.Call) (*proto.GetPromptResult, error) {
	answers, err := ask(ctx, c, map[string]proto.InputRequest{
		"user_context": elicit("What context should the prompt use?", contextSchema),
	})
	if err != nil {
		return nil, err
	}
	ans, err := decodeElicit(answers, "user_context")
	if err != nil {
		return nil, err
	}
	text := "Context: (none given)"
	if ans.accepted() {
		text = "Context: " + ans.str("context")
	}
	return &proto.GetPromptResult{Description: "A prompt with elicited context",
		Messages: []proto.PromptMessage{userText(text)}}, nil
}
