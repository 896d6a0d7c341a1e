package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/apikit-dev/apikit/internal/proccpu"
	"github.com/apikit-dev/apikit/server"
)

// BenchmarkFilterChain measures what the default handler chain (recovery,
// request info, timeout, authentication, authorization) adds to a request
// that does nothing, against the bare handler.
func BenchmarkFilterChain(b *testing.B) {
	noop := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	completed, err := testConfig(nil).Complete()
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", noop},
		{"chain", server.DefaultBuildHandlerChain(noop, &completed)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/apis/test.example.com/v1/namespaces/ns/widgets/w1", nil)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				tc.h.ServeHTTP(rec, r)
				if rec.Code != http.StatusNoContent {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}

// BenchmarkServeGet serves GET of one widget through a whole server: the
// filter chain, the routing to the REST handler, the handler, and the
// memory backend (whose memo keeps the widget's JSON): what apikit itself
// adds to a GET beyond HTTP/2, TLS and storage.
func BenchmarkServeGet(b *testing.B) {
	s := newServer(b, "bench", server.NewEmptyDelegate())
	if err := s.InstallAPIGroup(widgetGroup(b, "example.com")); err != nil {
		b.Fatal(err)
	}
	benchGet(b, s.Handler)
}

// benchGet creates widget w1 through h, then GETs it b.N times, and
// reports the process's CPU time per GET (GC included).
func benchGet(b *testing.B, h http.Handler) {
	b.Helper()
	post := httptest.NewRequest("POST", "/apis/example.com/v1/namespaces/ns/widgets", strings.NewReader(`{"metadata":{"name":"w1"}}`))
	post.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, post)
	if rec.Code != http.StatusCreated {
		b.Fatal(rec.Code, rec.Body.String())
	}
	r := httptest.NewRequest("GET", "/apis/example.com/v1/namespaces/ns/widgets/w1", nil)
	r.Header.Set("Accept", "application/json")
	b.ReportAllocs()
	start := proccpu.Used()
	for b.Loop() {
		w := &discardWriter{header: http.Header{}}
		h.ServeHTTP(w, r)
		if w.code != http.StatusOK {
			b.Fatal(w.code)
		}
	}
	if cpu := proccpu.Used() - start; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// discardWriter is a ResponseWriter that keeps the status only.
type discardWriter struct {
	header http.Header
	code   int
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

// BenchmarkMetricsGet is BenchmarkServeGet without metrics and tracing,
// with metrics, and with metrics and tracing at sampling rate 0 (a
// TracerProvider as --tracing-config-file makes it, sampling nothing):
// what observability costs a GET when nobody asked for a trace.
func BenchmarkMetricsGet(b *testing.B) {
	for _, tc := range []struct {
		name             string
		metrics, tracing bool
	}{{"without", false, false}, {"with", true, false}, {"with-tracing-unsampled", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := testConfig(nil)
			if tc.tracing {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0))))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				cfg.TracerProvider = tp
			}
			completed, err := cfg.Complete()
			if err != nil {
				b.Fatal(err)
			}
			if !tc.metrics {
				completed.Metrics = nil
			}
			s, err := completed.New("bench", server.NewEmptyDelegate())
			if err != nil {
				b.Fatal(err)
			}
			if err := s.InstallAPIGroup(widgetGroup(b, "example.com")); err != nil {
				b.Fatal(err)
			}
			benchGet(b, s.Handler)
		})
	}
}
