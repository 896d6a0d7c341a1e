package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

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
