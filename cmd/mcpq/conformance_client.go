package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/mcpq/mcpq/client"
	"github.com/mcpq/mcpq/proto"
)

// runConformanceClient is the client the official conformance suite drives
// (conformance client --command "mcpq conformance-client"): it gets the
// server URL as its last argument and the scenario in
// MCP_CONFORMANCE_SCENARIO (with MCP_CONFORMANCE_CONTEXT, JSON, for some),
// and does what an everyday client does against it with package client:
// server/discover, tools/list, then every tool called (the context's
// calls when it names them), input requests answered by filling the form.
func runConformanceClient(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: mcpq conformance-client URL (scenario in MCP_CONFORMANCE_SCENARIO)")
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sc struct {
		ClientID      string `json:"client_id"`
		ClientSecret  string `json:"client_secret"`
		PrivateKeyPEM string `json:"private_key_pem"`
		ValidJWT      string `json:"valid_jwt"`
		IdPClientID   string `json:"idp_client_id"`
		IdPIDToken    string `json:"idp_id_token"`
		IdPTokenURL   string `json:"idp_token_endpoint"`
		ToolCalls     []struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"toolCalls"`
	}
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	c := &client.Client{
		URL:          args[len(args)-1],
		Tasks:        true,
		Capabilities: proto.ClientCapabilities{Elicitation: json.RawMessage(`{"form":{}}`)},
		Info:         &proto.Implementation{Name: "mcpq-conformance-client", Version: "0.1.0"},
		Input:        fillForm,
	}
	auth := &client.OAuth{Server: c.URL, ClientID: sc.ClientID, ClientSecret: sc.ClientSecret,
		ClientCredentials: strings.HasPrefix(scenario, "auth/client-credentials"),
		ClientName:        "mcpq-conformance-client", Browse: followRedirects,
		ClientMetadataURL: "https://conformance-test.local/client-metadata.json", DPoP: true}
	if sc.PrivateKeyPEM != "" {
		var err error
		if auth.ClientKey, err = client.ParsePrivateKey([]byte(sc.PrivateKeyPEM)); err != nil {
			return err
		}
	}
	switch {
	case sc.ValidJWT != "": // workload identity: the JWT bearer grant
		auth.Assertion = func(context.Context, string, string) (string, error) { return sc.ValidJWT, nil }
	case sc.IdPIDToken != "": // enterprise-managed: an ID-JAG from the IdP, then the JWT bearer grant
		auth.Assertion = func(ctx context.Context, issuer, resource string) (string, error) {
			return client.ExchangeIDJAG(ctx, nil, sc.IdPTokenURL, sc.IdPClientID, sc.IdPIDToken, issuer, resource)
		}
	}
	c.Auth = auth
	if _, err := c.Discover(ctx); err != nil {
		return fmt.Errorf("server/discover: %w", err)
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	call := func(name string, args any) {
		a, err := c.CallTool(ctx, name, args)
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "tools/call %s: %v\n", name, err)
		case a.Handle != nil:
			if _, err := a.Handle.Wait(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "task of %s: %v\n", name, err)
			}
		}
	}
	switch {
	case scenario == "json-schema-2020-12-preservation":
		// Echo the focal tool's inputSchema back, verbatim.
		for _, t := range tools {
			if t.Name != "json_schema_echo" {
				call("json_schema_echo", map[string]any{"schema": t.InputSchema})
			}
		}
	case len(sc.ToolCalls) > 0:
		for _, tc := range sc.ToolCalls {
			call(tc.Name, tc.Arguments)
		}
	default:
		for _, t := range tools {
			call(t.Name, sampleArgs(t.InputSchema))
		}
	}
	if scenario == "http-standard-headers" {
		var rl proto.ListResourcesResult
		if err := c.Call(ctx, proto.MethodResourcesList, "", nil, &rl); err == nil {
			for _, r := range rl.Resources {
				_ = c.Call(ctx, proto.MethodResourcesRead, r.URI, map[string]any{"uri": r.URI}, nil)
			}
		}
		var pl proto.ListPromptsResult
		if err := c.Call(ctx, proto.MethodPromptsList, "", nil, &pl); err == nil {
			for _, p := range pl.Prompts {
				_ = c.Call(ctx, proto.MethodPromptsGet, p.Name, map[string]any{"name": p.Name}, nil)
			}
		}
	}
	return nil
}

// schemaProps is the part of an object schema sampleArgs and fillForm read.
type schemaProps struct {
	Properties map[string]struct {
		Type    string `json:"type"`
		Default any    `json:"default"`
		Enum    []any  `json:"enum"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// sample is a plausible value of a property: its default, its first enum
// value, or a value of its type.
func sample(typ string, def any, enum []any) any {
	switch {
	case def != nil:
		return def
	case len(enum) > 0:
		return enum[0]
	}
	switch typ {
	case "boolean":
		return true
	case "integer", "number":
		return 1
	case "object":
		return map[string]any{}
	case "array":
		return []any{}
	}
	return "conformance"
}

// sampleArgs fills the required properties of an inputSchema.
func sampleArgs(schema json.RawMessage) map[string]any {
	var s schemaProps
	_ = json.Unmarshal(schema, &s)
	out := map[string]any{}
	for _, name := range s.Required {
		p := s.Properties[name]
		out[name] = sample(p.Type, p.Default, p.Enum)
	}
	return out
}

// fillForm answers an input request as a cooperative user would: a form
// accepted with every field filled (defaults first), a model reply, no roots.
func fillForm(_ context.Context, r client.InputRequest) (any, error) {
	switch r.Method {
	case proto.MethodElicit:
		var p struct {
			RequestedSchema schemaProps `json:"requestedSchema"`
		}
		_ = json.Unmarshal(r.Params, &p)
		content := map[string]any{}
		for name, f := range p.RequestedSchema.Properties {
			content[name] = sample(f.Type, f.Default, f.Enum)
		}
		b, _ := json.Marshal(content)
		return proto.ElicitResult{Action: proto.ElicitAccept, Content: b}, nil
	case proto.MethodCreateMessage:
		return proto.CreateMessageResult{Role: "assistant", Content: proto.ContentBlocks{proto.TextContent("conformance")}, Model: "mcpq"}, nil
	case proto.MethodListRoots:
		return proto.ListRootsResult{Roots: []proto.Root{}}, nil
	}
	return nil, fmt.Errorf("cannot answer %s", r.Method)
}

// followRedirects is the person at the browser of the suite's authorization
// servers, which approve at once: it opens the authorization URL and follows
// the redirects to the client's loopback redirect URI.
func followRedirects(ctx context.Context, authURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return nil
}
