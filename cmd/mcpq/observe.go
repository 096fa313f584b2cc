package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// newRegistry is a process's Prometheus registry: mcpq's collectors join
// it, beside the Go runtime's and the process's.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// tracing exports spans over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (and OTEL_TRACES_EXPORTER is
// not "none"); the exporter reads its other OTEL_EXPORTER_OTLP_* settings
// and OTEL_SERVICE_NAME overrides service. Otherwise the provider is nil
// and no span is made.
// The returned func flushes and stops the exporter.
func tracing(ctx context.Context, log *slog.Logger, service string) (trace.TracerProvider, func(), error) {
	if os.Getenv("OTEL_TRACES_EXPORTER") == "none" ||
		(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "") {
		return nil, func() {}, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, err
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	log.Info("tracing: spans exported over OTLP/HTTP", "service", service)
	return tp, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			log.Warn("tracing: flush spans", "err", err)
		}
	}, nil
}

// serveOps serves a worker's /metrics, /healthz and /readyz on addr until
// stop is called; "" serves nothing.
func serveOps(log *slog.Logger, addr string, h http.Handler) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics and health endpoint stopped", "err", err)
		}
	}()
	log.Info("worker metrics and health", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
}
