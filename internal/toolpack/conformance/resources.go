package conformance

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpq/mcpq/proto"
	"github.com/mcpq/mcpq/worker"
)

// The resource and completion fixtures of the resources-*, caching and
// completion-complete scenarios. A resource handler's c.Arguments is
// {"uri": ...}; a template's adds {"variables": {name: value}}.

// watchedURI is the resource announced as updated every watchEvery.
const (
	watchedURI = "test://watched-resource"
	watchEvery = 3 * time.Second
)

// Cache hints of the reads: static contents keep, the watched one changes.
const (
	staticTTLMs  = 60 * 1000
	watchedTTLMs = 0
)

// resources are the direct resource fixtures.
func resources() []worker.Resource {
	return []worker.Resource{
		{
			Resource: proto.Resource{URI: "test://static-text", Name: "static-text", Title: "Static text",
				Description: "A static text resource.", MimeType: "text/plain"},
			Handler: readText("text/plain", staticTTLMs, "This is the content of the static text resource."),
		},
		{
			Resource: proto.Resource{URI: "test://static-binary", Name: "static-binary", Title: "Static binary",
				Description: "A static binary resource (a 1x1 red PNG).", MimeType: "image/png"},
			Handler: readStaticBinary,
		},
		{
			Resource: proto.Resource{URI: watchedURI, Name: "watched-resource", Title: "Watched resource",
				Description: "A text resource announced as updated every 3 seconds.", MimeType: "text/plain"},
			Handler: readText("text/plain", watchedTTLMs, "Watched resource content"),
		},
	}
}

// templates are the resource template fixtures.
func templates() []worker.ResourceTemplate {
	return []worker.ResourceTemplate{{
		Template: proto.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template",
			Title: "Template data", Description: "JSON data for any id, substituted into the content.",
			MimeType: "application/json"},
		Handler: readTemplate,
	}}
}

// readArgs are a resource handler's arguments.
type readArgs struct {
	URI       string            `json:"uri"`
	Variables map[string]string `json:"variables"`
}

func bindRead(c *worker.Call) (readArgs, error) {
	var a readArgs
	if err := c.Bind(&a); err != nil {
		return a, err
	}
	if a.URI == "" {
		return a, proto.NewError(proto.CodeInvalidParams, "Invalid params: uri is required")
	}
	return a, nil
}

// readResult is a one-content read result with cache hints.
func readResult(rc proto.ResourceContents, ttlMs int64) *proto.ReadResourceResult {
	return &proto.ReadResourceResult{
		CacheHints: proto.CacheHints{TTLMs: ttlMs, CacheScope: proto.CachePublic},
		Contents:   []proto.ResourceContents{rc},
	}
}

// readText serves a fixed text.
func readText(mimeType string, ttlMs int64, text string) func(context.Context, *worker.Call) (*proto.ReadResourceResult, error) {
	return func(ctx context.Context, c *worker.Call) (*proto.ReadResourceResult, error) {
		a, err := bindRead(c)
		if err != nil {
			return nil, err
		}
		t := text
		return readResult(proto.ResourceContents{URI: a.URI, MimeType: mimeType, Text: &t}, ttlMs), nil
	}
}

func readStaticBinary(ctx context.Context, c *worker.Call) (*proto.ReadResourceResult, error) {
	a, err := bindRead(c)
	if err != nil {
		return nil, err
	}
	blob := pngBase64
	return readResult(proto.ResourceContents{URI: a.URI, MimeType: "image/png", Blob: &blob}, staticTTLMs), nil
}

func readTemplate(ctx context.Context, c *worker.Call) (*proto.ReadResourceResult, error) {
	a, err := bindRead(c)
	if err != nil {
		return nil, err
	}
	id := a.Variables["id"]
	if id == "" {
		return nil, &proto.Error{Code: proto.CodeInvalidParams, Message: "Resource not found",
			Data: map[string]string{"uri": a.URI}}
	}
	b, err := json.Marshal(struct {
		ID           string `json:"id"`
		TemplateTest bool   `json:"templateTest"`
		Data         string `json:"data"`
	}{id, true, "Data for ID: " + id})
	if err != nil {
		return nil, err
	}
	text := string(b)
	return readResult(proto.ResourceContents{URI: a.URI, MimeType: "application/json", Text: &text}, staticTTLMs), nil
}

// announceWatched tells listeners that the watched resource changed at
// each multiple of watchEvery on the clock, until ctx is done. Every
// worker running the pack sees the same change, named by its time, so
// listeners get it once however many workers run (Worker.ResourceChanged).
func announceWatched(ctx context.Context, w *worker.Worker) {
	for {
		next := time.Now().Truncate(watchEvery).Add(watchEvery)
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
			_ = w.ResourceChanged(ctx, watchedURI, strconv.FormatInt(next.UnixMilli(), 10), 10*watchEvery)
		}
	}
}

// suggestions are the completion candidates by argument name.
var suggestions = map[string][]string{
	"arg1":        {"paris", "park", "party", "test", "testValue1"},
	"arg2":        {"tokyo", "toronto", "test", "testValue2"},
	"resourceUri": {"test://static-text", "test://static-binary", "test://watched-resource", "test://template/1/data"},
	"id":          {"1", "2", "3", "42", "123"},
}

// maxCompletions is the most values one completion/complete answers.
const maxCompletions = 100

// complete answers completion/complete: the known values of the argument
// that start with what was typed so far (case-insensitive).
func complete(ctx context.Context, c *worker.Call) (*proto.CompleteResult, error) {
	var p struct {
		Ref struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
		Argument struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"argument"`
	}
	if err := c.Bind(&p); err != nil {
		return nil, err
	}
	switch p.Ref.Type {
	case "ref/prompt", "ref/resource":
	default:
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: unknown ref type %q", p.Ref.Type)
	}
	if p.Argument.Name == "" {
		return nil, proto.NewError(proto.CodeInvalidParams, "Invalid params: argument.name is required")
	}
	values := []string{}
	prefix := strings.ToLower(p.Argument.Value)
	for _, v := range suggestions[p.Argument.Name] {
		if strings.HasPrefix(strings.ToLower(v), prefix) {
			values = append(values, v)
		}
	}
	sort.Strings(values)
	total := len(values)
	if len(values) > maxCompletions {
		values = values[:maxCompletions]
	}
	return &proto.CompleteResult{Completion: proto.Completion{Values: values, Total: total,
		HasMore: total > len(values)}}, nil
}
