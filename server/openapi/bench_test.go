package openapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server/openapi"
)

// BenchmarkBuild builds the v2 document, the v3 documents and their
// encodings (JSON, gzip, hashes) for wardle and widgets: the work
// PrepareRun does once.
func BenchmarkBuild(b *testing.B) {
	srv := newChain(b)
	var resources []registry.Resource
	for _, g := range srv.APIGroups() {
		for _, v := range g.Versions {
			resources = append(resources, v.Resources...)
		}
	}
	cfg := openapi.Config{Title: "bench", Version: "v1", WebServices: srv.WebServices(), Resources: resources}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := openapi.Build(cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServeV2 serves the prebuilt, gzipped v2 document as kubectl asks
// for it, without the server's filters.
func BenchmarkServeV2(b *testing.B) {
	docs := buildDocs(b, newChain(b))
	h := docs.V2Handler()
	req := httptest.NewRequest(http.MethodGet, "/openapi/v2", nil)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}
