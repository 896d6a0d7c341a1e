package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// otlpReceiver is an OTLP gRPC trace collector run by the test: it keeps
// every span the server exports.
type otlpReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu      sync.Mutex
	spans   []*tracev1.Span
	service map[string]bool
}

func (o *otlpReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				o.service[a.GetValue().GetStringValue()] = true
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			o.spans = append(o.spans, ss.GetSpans()...)
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (o *otlpReceiver) named(name string) []*tracev1.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracev1.Span
	for _, s := range o.spans {
		if s.GetName() == name {
			out = append(out, s)
		}
	}
	return out
}

func (o *otlpReceiver) inTrace(traceID []byte) []*tracev1.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracev1.Span
	for _, s := range o.spans {
		if string(s.GetTraceId()) == string(traceID) {
			out = append(out, s)
		}
	}
	return out
}

func startOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rcv := &otlpReceiver{service: map[string]bool{}}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, rcv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() { srv.Stop(); <-done })
	return rcv, l.Addr().String()
}

// TestTracing runs wardle (embedded etcd) with --tracing-config-file
// pointing at an OTLP receiver run by the test, sampling every request:
// each kubectl request is one trace, named as kube-apiserver names its
// spans, and a create's trace holds the etcd write's span inside the
// request's span.
func TestTracing(t *testing.T) {
	rcv, addr := startOTLPReceiver(t)
	cfg := filepath.Join(t.TempDir(), "tracing.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: %s\nsamplingRatePerMillion: 1000000\n", addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	w := StartWardle(t, "--tracing-config-file="+cfg)
	w.KubectlStdin(fmt.Sprintf(flunderYAML, "traced", "none"), "create", "-f", "-")
	for range 3 {
		w.Kubectl("get", "flunder", "traced")
	}

	const create = "POST /apis/wardle.example.com/v1beta1/namespaces/{:namespace}/flunders"
	const get = "GET /apis/wardle.example.com/v1beta1/namespaces/{:namespace}/flunders/{:name}"
	deadline := time.Now().Add(60 * time.Second) // spans leave in batches every 5 s
	for (len(rcv.named(create)) < 1 || len(rcv.named(get)) < 3) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	creates, gets := rcv.named(create), rcv.named(get)
	if len(creates) != 1 || len(gets) != 3 {
		t.Fatalf("%d create and %d get spans, want 1 and 3", len(creates), len(gets))
	}
	traces := map[string]bool{}
	for _, s := range append(gets, creates...) {
		if len(s.GetParentSpanId()) != 0 {
			t.Errorf("request span %q has a parent: kubectl sent no trace context", s.GetName())
		}
		if s.GetKind() != tracev1.Span_SPAN_KIND_SERVER {
			t.Errorf("request span %q has kind %v", s.GetName(), s.GetKind())
		}
		traces[hex.EncodeToString(s.GetTraceId())] = true
	}
	if len(traces) != 4 {
		t.Errorf("4 requests made %d traces, want one each", len(traces))
	}
	var storageSpan *tracev1.Span
	for _, s := range rcv.inTrace(creates[0].GetTraceId()) {
		if s.GetName() == "Create etcd3" || s.GetName() == "GuaranteedUpdate etcd3" {
			storageSpan = s
		}
	}
	if storageSpan == nil {
		t.Fatalf("the create's trace has no etcd span: %v", rcv.inTrace(creates[0].GetTraceId()))
	}
	if string(storageSpan.GetParentSpanId()) != string(creates[0].GetSpanId()) {
		t.Error("the etcd span is not inside the request's span")
	}
	if storageSpan.GetStartTimeUnixNano() < creates[0].GetStartTimeUnixNano() || storageSpan.GetEndTimeUnixNano() > creates[0].GetEndTimeUnixNano() {
		t.Error("the etcd span does not lie within the request's span")
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if !rcv.service["apiserver"] {
		t.Errorf("service names %v, want apiserver", rcv.service)
	}
}
