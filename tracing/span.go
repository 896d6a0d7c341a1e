package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// instrumentation is the name apikit's spans are recorded under.
const instrumentation = "github.com/apikit-dev/apikit"

// Propagator reads and writes W3C trace context (traceparent, tracestate)
// and baggage, as kube-apiserver's.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Start opens a span named name as a child of the span in ctx, with the
// provider that span came from. When ctx's span is not recording (no
// tracing, or not sampled) it returns ctx and a span that does nothing,
// without allocating.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(instrumentation).Start(ctx, name, trace.WithAttributes(attrs...))
}

// Inject writes ctx's trace context into h, so that a webhook or a proxied
// server joins the trace.
func Inject(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	Propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// ContextProvider is a TracerProvider whose tracers open spans with the
// provider of the span in the context they are given: instrumentation that
// wants a provider up front (gRPC's stats handler on the etcd client) then
// follows each request's own tracing, and records nothing for a request
// that is not sampled.
func ContextProvider() trace.TracerProvider { return contextProvider{} }

type contextProvider struct{ embedded.TracerProvider }

func (contextProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return contextTracer{name: name, opts: opts}
}

type contextTracer struct {
	embedded.Tracer
	name string
	opts []trace.TracerOption
}

func (t contextTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return noop.NewTracerProvider().Tracer(t.name).Start(ctx, name, opts...)
	}
	return parent.TracerProvider().Tracer(t.name, t.opts...).Start(ctx, name, opts...)
}
