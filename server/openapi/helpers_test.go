package openapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-openapi/spec"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/examples/wardle/wardleapi"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/openapi"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// admin lets every request in as a cluster admin: these tests are about
// documents, not about who may read them.
var admin = authn.Func(func(*http.Request) (*authn.Response, bool, error) {
	return &authn.Response{User: authn.User{Name: "admin", Groups: []string{authn.SystemPrivilegedGroup}}}, true, nil
})

// newWardle builds (not runs) a server with the wardle API on memory
// storage, prepared to run, so its OpenAPI documents are built.
func newWardle(t testing.TB, configure func(*server.Config)) *server.GenericServer {
	t.Helper()
	srv := newServer(t, "wardle", server.NewEmptyDelegate(), configure, wardleGroup(t))
	srv.PrepareRun()
	return srv
}

// wardleGroup is the wardle API on fresh memory storage.
func wardleGroup(t testing.TB) *server.APIGroupInfo {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	api, err := wardleapi.New(storage.Shared(store))
	if err != nil {
		t.Fatal(err)
	}
	group, err := api.GroupInfo()
	if err != nil {
		t.Fatal(err)
	}
	return group
}

// newServer builds a server in front of delegate serving groups.
func newServer(t testing.TB, name string, delegate server.DelegationTarget, configure func(*server.Config), groups ...*server.APIGroupInfo) *server.GenericServer {
	t.Helper()
	cfg := server.NewConfig()
	cfg.Authenticator = admin
	cfg.OpenAPITitle, cfg.OpenAPIVersion = name, "v0.0.1"
	if configure != nil {
		configure(cfg)
	}
	completed, err := cfg.Complete()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := completed.New(name, delegate)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if err := srv.InstallAPIGroup(g); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}

// get serves one GET through the server's full handler chain.
func get(t testing.TB, h http.Handler, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// swagger fetches and decodes /openapi/v2.
func swagger(t testing.TB, h http.Handler) *spec.Swagger {
	t.Helper()
	rec := get(t, h, "/openapi/v2")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi/v2: %d %s", rec.Code, rec.Body)
	}
	sw := &spec.Swagger{}
	if err := json.Unmarshal(rec.Body.Bytes(), sw); err != nil {
		t.Fatalf("decoding /openapi/v2: %v", err)
	}
	return sw
}

// v3Doc is the part of an OpenAPI 3.0 document the tests read.
type v3Doc struct {
	OpenAPI string `json:"openapi"`
	Paths   map[string]map[string]struct {
		OperationID string `json:"operationId"`
		Parameters  []struct {
			Name, In string
			Required bool
			Schema   map[string]any
		} `json:"parameters"`
		RequestBody *struct {
			Required bool                      `json:"required"`
			Content  map[string]map[string]any `json:"content"`
		} `json:"requestBody"`
		Responses map[string]struct {
			Content map[string]map[string]any `json:"content"`
		} `json:"responses"`
		Action string            `json:"x-kubernetes-action"`
		GVK    map[string]string `json:"x-kubernetes-group-version-kind"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]map[string]any `json:"schemas"`
	} `json:"components"`
}

// v3Index fetches /openapi/v3.
func v3Index(t testing.TB, h http.Handler) map[string]string {
	t.Helper()
	rec := get(t, h, "/openapi/v3")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi/v3: %d %s", rec.Code, rec.Body)
	}
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &index); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range index.Paths {
		out[k] = v.ServerRelativeURL
	}
	return out
}

// buildDocs builds the documents of srv (and its delegates) directly.
func buildDocs(t testing.TB, srv *server.GenericServer) *openapi.Documents {
	t.Helper()
	var resources []registry.Resource
	for _, g := range srv.APIGroups() {
		for _, v := range g.Versions {
			resources = append(resources, v.Resources...)
		}
	}
	docs, err := openapi.Build(openapi.Config{Title: "t", Version: "v", WebServices: srv.WebServices(), Resources: resources})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}
