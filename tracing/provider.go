package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// NewProvider returns a TracerProvider that exports spans over OTLP gRPC to
// c's endpoint in batches, sampling as kube-apiserver does: a request
// whose parent is sampled is sampled, others at c's rate per million.
// service names the process in the traces (kube-apiserver's is
// "apiserver"). Shut the provider down when the server stops: it sends
// the spans still queued. The exporter connects lazily: a collector that
// is down loses spans, never requests.
func NewProvider(ctx context.Context, c *Configuration, service string) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(c.endpoint()), otlptracegrpc.WithInsecure())
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter for %s: %w", c.endpoint(), err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", service))
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.ratio()))),
	), nil
}
