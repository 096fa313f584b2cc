package client

import (
	"context"
	"net/http"
)

type metaKey struct{}
type headerKey struct{}

// WithMeta returns a context whose requests carry these extra _meta keys
// (a progressToken, W3C traceparent/tracestate, your own prefixed keys)
// next to the ones the client always sends, which they cannot replace.
func WithMeta(ctx context.Context, meta map[string]any) context.Context {
	merged := map[string]any{}
	if prev, ok := ctx.Value(metaKey{}).(map[string]any); ok {
		for k, v := range prev {
			merged[k] = v
		}
	}
	for k, v := range meta {
		merged[k] = v
	}
	return context.WithValue(ctx, metaKey{}, merged)
}

// WithHeader returns a context whose requests carry these extra HTTP
// headers (after Client.Header; the protocol's own headers win).
func WithHeader(ctx context.Context, h http.Header) context.Context {
	merged := http.Header{}
	if prev, ok := ctx.Value(headerKey{}).(http.Header); ok {
		for k, v := range prev {
			merged[k] = v
		}
	}
	for k, v := range h {
		merged[k] = v
	}
	return context.WithValue(ctx, headerKey{}, merged)
}
