package openapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/server/endpoints"
	"github.com/apikit-dev/apikit/server/openapi"
)

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestServeCaching checks each document's ETag, 304, gzip and HEAD.
func TestServeCaching(t *testing.T) {
	h := newWardle(t, nil).Handler
	index := v3Index(t, h)
	for _, path := range []string{"/openapi/v2", "/openapi/v3", "/openapi/v3/apis/wardle.example.com/v1beta1", index["apis/wardle.example.com/v1alpha1"]} {
		t.Run(path, func(t *testing.T) {
			plain := get(t, h, path)
			if plain.Code != http.StatusOK || plain.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("GET: %d %v", plain.Code, plain.Header())
			}
			if !json.Valid(plain.Body.Bytes()) {
				t.Fatal("body is not JSON")
			}
			etag := plain.Header().Get("Etag")
			if len(etag) != 130 || !strings.HasPrefix(etag, `"`) {
				t.Errorf("Etag = %s, want a quoted SHA-512", etag)
			}
			if again := get(t, h, path); !bytes.Equal(again.Body.Bytes(), plain.Body.Bytes()) || again.Header().Get("Etag") != etag {
				t.Error("the document changed between requests")
			}

			nm := get(t, h, path, "If-None-Match", etag)
			if nm.Code != http.StatusNotModified || nm.Body.Len() != 0 || nm.Header().Get("Etag") != etag {
				t.Errorf("If-None-Match: %d, %d bytes, Etag %s", nm.Code, nm.Body.Len(), nm.Header().Get("Etag"))
			}
			if stale := get(t, h, path, "If-None-Match", `"0000"`); stale.Code != http.StatusOK {
				t.Errorf("stale If-None-Match: %d", stale.Code)
			}

			gz := get(t, h, path, "Accept-Encoding", "gzip, deflate")
			if gz.Header().Get("Content-Encoding") != "gzip" {
				t.Fatalf("Accept-Encoding gzip: Content-Encoding %q", gz.Header().Get("Content-Encoding"))
			}
			if !bytes.Equal(gunzip(t, gz.Body.Bytes()), plain.Body.Bytes()) {
				t.Error("gzipped body differs from the plain one")
			}
			if !strings.Contains(strings.Join(gz.Header().Values("Vary"), ","), "Accept-Encoding") {
				t.Errorf("Vary = %v", gz.Header().Values("Vary"))
			}
			gzTag := gz.Header().Get("Etag")
			if gzTag == etag {
				t.Error("gzipped and plain bodies share a strong ETag")
			}
			if nm := get(t, h, path, "Accept-Encoding", "gzip", "If-None-Match", gzTag); nm.Code != http.StatusNotModified {
				t.Errorf("If-None-Match with the gzip ETag: %d", nm.Code)
			}

			req := httptest.NewRequest(http.MethodHead, path, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") != plain.Header().Get("Content-Length") {
				t.Errorf("HEAD: %d, %d bytes, Content-Length %s", rec.Code, rec.Body.Len(), rec.Header().Get("Content-Length"))
			}
		})
	}
}

func TestServeNegotiation(t *testing.T) {
	h := newWardle(t, nil).Handler
	for _, tt := range []struct {
		name, method, path, accept string
		code                       int
	}{
		{"protobuf only", http.MethodGet, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", http.StatusNotAcceptable},
		{"protobuf then JSON", http.MethodGet, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json", http.StatusOK},
		{"v3 protobuf only", http.MethodGet, "/openapi/v3/apis/wardle.example.com/v1beta1", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf", http.StatusNotAcceptable},
		{"any", http.MethodGet, "/openapi/v3/apis/wardle.example.com/v1beta1", "*/*", http.StatusOK},
		{"unknown group-version", http.MethodGet, "/openapi/v3/apis/wardle.example.com/v9", "", http.StatusNotFound},
		{"index with a slash", http.MethodGet, "/openapi/v3/", "", http.StatusOK},
		{"POST", http.MethodPost, "/openapi/v2", "", http.StatusMethodNotAllowed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("%s %s: %d, want %d: %s", tt.method, tt.path, rec.Code, tt.code, rec.Body)
			}
			if tt.code >= 400 {
				var st struct{ Kind, Status string }
				if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || st.Status != "Failure" {
					t.Errorf("error body is not a Status: %s", rec.Body)
				}
			}
		})
	}
}

// TestServeV3Hash checks kube-apiserver's caching contract: a document
// asked for by its hash is immutable; an old hash redirects to the current.
func TestServeV3Hash(t *testing.T) {
	h := newWardle(t, nil).Handler
	url := v3Index(t, h)["apis/wardle.example.com/v1beta1"]

	hashed := get(t, h, url)
	if cc := hashed.Header().Get("Cache-Control"); cc != "public, immutable" {
		t.Errorf("Cache-Control = %q", cc)
	}
	exp, err := http.ParseTime(hashed.Header().Get("Expires"))
	if err != nil || time.Until(exp) < 364*24*time.Hour {
		t.Errorf("Expires = %q (%v)", hashed.Header().Get("Expires"), err)
	}

	bare := get(t, h, "/openapi/v3/apis/wardle.example.com/v1beta1")
	if bare.Header().Get("Cache-Control") != "" || bare.Header().Get("Expires") != "" {
		t.Errorf("a document without ?hash= was made cacheable: %v", bare.Header())
	}
	if !bytes.Equal(bare.Body.Bytes(), hashed.Body.Bytes()) {
		t.Error("hashed and bare requests answer different documents")
	}

	old := get(t, h, "/openapi/v3/apis/wardle.example.com/v1beta1?hash=0123")
	if old.Code != http.StatusMovedPermanently || old.Header().Get("Location") != url {
		t.Errorf("old hash: %d Location %q, want 301 to %s", old.Code, old.Header().Get("Location"), url)
	}
}

// TestPrepareRunTwice keeps the documents of the first call (and does not
// register the routes twice, which would panic).
func TestPrepareRunTwice(t *testing.T) {
	srv := newWardle(t, nil)
	before := get(t, srv.Handler, "/openapi/v2").Header().Get("Etag")
	srv.PrepareRun()
	if after := get(t, srv.Handler, "/openapi/v2").Header().Get("Etag"); after != before {
		t.Errorf("Etag changed from %s to %s", before, after)
	}
}

// TestBuildErrors: a route table that cannot be documented is an error, not
// a document that misleads clients.
func TestBuildErrors(t *testing.T) {
	ws := new(restful.WebService).Path("/apis/example.com/v1")
	ws.Route(ws.GET("/things").To(func(*restful.Request, *restful.Response) {}).
		Metadata(endpoints.MetadataKind, "Thing").Metadata(endpoints.MetadataList, true))
	_, err := openapi.Build(openapi.Config{WebServices: []*restful.WebService{ws}})
	if err == nil || !strings.Contains(err.Error(), "Thing") {
		t.Errorf("Build = %v, want an error naming the kind without a Go type", err)
	}
}

// TestBuildAPI exercises the exported accessors on a server's routes.
func TestBuildAPI(t *testing.T) {
	srv := newServer(t, "wardle", nil, nil, wardleGroup(t))
	docs := buildDocs(t, srv)
	if got := strings.Join(docs.V3Paths(), " "); got != "apis/wardle.example.com/v1alpha1 apis/wardle.example.com/v1beta1" {
		t.Errorf("V3Paths = %s", got)
	}
	doc, hash, ok := docs.V3JSON("apis/wardle.example.com/v1beta1")
	if !ok || len(hash) != 128 || !json.Valid(doc) {
		t.Errorf("V3JSON: ok %v, hash %q, valid %v", ok, hash, json.Valid(doc))
	}
	if _, _, ok := docs.V3JSON("apis/nope/v1"); ok {
		t.Error("V3JSON found a document that does not exist")
	}
	var v2 map[string]any
	if err := json.Unmarshal(docs.V2JSON(), &v2); err != nil || v2["swagger"] != "2.0" {
		t.Errorf("V2JSON: %v", err)
	}
	if docs.Swagger().Definitions["com.example.wardle.v1beta1.Flunder"].Description == "" {
		t.Error("Swagger() lacks Flunder")
	}
}
