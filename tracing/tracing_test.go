package tracing_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/apikit-dev/apikit/tracing"
)

func TestParseConfiguration(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
		endpoint          string
	}{
		{name: "v1 with endpoint and rate", in: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: 127.0.0.1:4317\nsamplingRatePerMillion: 100\n"},
		{name: "v1beta1 empty", in: "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\n"},
		{name: "v1alpha1", in: "apiVersion: apiserver.config.k8s.io/v1alpha1\nkind: TracingConfiguration\n"},
		{name: "wrong group", in: "apiVersion: v1\nkind: TracingConfiguration\n", wantErr: `apiVersion "v1" is not`},
		{name: "wrong kind", in: "apiVersion: apiserver.config.k8s.io/v1\nkind: EgressSelectorConfiguration\n", wantErr: `kind "EgressSelectorConfiguration" is not TracingConfiguration`},
		{name: "negative rate", in: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: -1\n", wantErr: "samplingRatePerMillion: Invalid value: -1: sampling rate must be positive"},
		{name: "rate over a million", in: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 1000001\n", wantErr: "sampling rate per million must be less than or equal to one million"},
		{name: "misspelt key", in: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMilion: 5\n", wantErr: "unknown field"},
		{name: "unix endpoint", in: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: unix:///run/otel.sock\n"},
		{name: "http endpoint", in: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: http://collector:4318\n", wantErr: "unsupported scheme: http."},
		{name: "unparseable endpoint", in: "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: \"dns://[::1\"\n", wantErr: "endpoint: Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tracing.ParseConfiguration([]byte(tt.in))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestStartFollowsTheSpanInTheContext(t *testing.T) {
	// No span: nothing recorded, the context is handed back as is.
	ctx := context.Background()
	got, span := tracing.Start(ctx, "Get etcd3")
	if got != ctx || span.IsRecording() {
		t.Fatal("Start without a recording parent made a span")
	}

	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, parent := tp.Tracer("test").Start(ctx, "request")
	child, span := tracing.Start(ctx, "Get etcd3")
	h := http.Header{}
	tracing.Inject(child, h)
	span.End()
	parent.End()
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "Get etcd3" || spans[0].Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("spans %+v", spans)
	}
	if tp := h.Get("Traceparent"); !strings.Contains(tp, span.SpanContext().SpanID().String()) {
		t.Errorf("traceparent %q does not name the child span", tp)
	}

	// ContextProvider's tracers follow the context the same way.
	tr := tracing.ContextProvider().Tracer("grpc")
	if _, s := tr.Start(context.Background(), "etcdserverpb.KV/Range"); s.IsRecording() {
		t.Error("ContextProvider recorded without a parent")
	}
	ctx, parent = tp.Tracer("test").Start(context.Background(), "request")
	_, s := tr.Start(ctx, "etcdserverpb.KV/Range")
	s.End()
	parent.End()
	if !s.SpanContext().IsValid() || s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Error("ContextProvider's span is not in the parent's trace")
	}
}
