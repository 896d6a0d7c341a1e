package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/tracing"
)

func TestWithTracing(t *testing.T) {
	const incomingTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceparent := "00-" + incomingTrace + "-00f067aa0ba902b7-01"
	tests := []struct {
		name        string
		user        *authn.User
		traceparent string
		wantJoined  bool // the span continues the client's trace
		wantLinked  bool // the client's trace is a link of a new one
	}{
		{name: "no trace context: a new trace", user: &authn.User{Name: "alice", Groups: []string{"dev"}}},
		{name: "an unprivileged client's context is only a link", user: &authn.User{Name: "alice", Groups: []string{"dev"}}, traceparent: traceparent, wantLinked: true},
		{name: "system:masters continues its trace", user: &authn.User{Name: "admin", Groups: []string{"system:masters"}}, traceparent: traceparent, wantJoined: true},
		{name: "system:monitoring continues its trace", user: &authn.User{Name: "prom", Groups: []string{"system:monitoring"}}, traceparent: traceparent, wantJoined: true},
		{name: "no user: only a link", traceparent: traceparent, wantLinked: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, span := tracing.Start(r.Context(), "Create etcd3")
				span.End()
				w.Header().Set(AuditIDHeader, "audit-1")
				w.WriteHeader(http.StatusCreated)
			})
			r := httptest.NewRequest("POST", "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders", nil)
			if tt.traceparent != "" {
				r.Header.Set("Traceparent", tt.traceparent)
			}
			ctx := request.WithInfo(r.Context(), &request.Info{IsResourceRequest: true, APIPrefix: "apis", Verb: "create",
				APIGroup: "wardle.example.com", APIVersion: "v1beta1", Namespace: "ns", Resource: "flunders"})
			if tt.user != nil {
				ctx = authn.WithUser(ctx, tt.user)
			}
			WithTracing(inner, tp).ServeHTTP(httptest.NewRecorder(), r.WithContext(ctx))
			spans := exp.GetSpans()
			if len(spans) != 2 {
				t.Fatalf("%d spans, want 2", len(spans))
			}
			storage, server := spans[0], spans[1]
			if server.Name != "POST /apis/wardle.example.com/v1beta1/namespaces/{:namespace}/flunders" {
				t.Errorf("span name %q", server.Name)
			}
			if storage.Parent.SpanID() != server.SpanContext.SpanID() {
				t.Error("the storage span is not the request span's child")
			}
			attrs := map[attribute.Key]attribute.Value{}
			for _, a := range server.Attributes {
				attrs[a.Key] = a.Value
			}
			if attrs["http.response.status_code"].AsInt64() != 201 || attrs["audit-id"].AsString() != "audit-1" ||
				attrs["http.request.method"].AsString() != "POST" {
				t.Errorf("attributes %v", server.Attributes)
			}
			joined := server.SpanContext.TraceID().String() == incomingTrace
			if joined != tt.wantJoined {
				t.Errorf("joined the client's trace: %v, want %v", joined, tt.wantJoined)
			}
			linked := len(server.Links) == 1 && server.Links[0].SpanContext.TraceID().String() == incomingTrace
			if linked != tt.wantLinked {
				t.Errorf("linked the client's trace: %v, want %v", linked, tt.wantLinked)
			}
		})
	}
}
