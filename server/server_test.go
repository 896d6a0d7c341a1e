package server_test

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage/memory"
)

type Widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            struct {
		Size int `json:"size,omitempty"`
	} `json:"spec,omitempty"`
	Status struct {
		Ready bool `json:"ready,omitempty"`
	} `json:"status,omitempty"`
}

type Gadget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
}

// widgetGroup is group g with widgets (namespaced, status subresource) in
// v1 and v1beta1, and gadgets (cluster-scoped) in v1.
func widgetGroup(t testing.TB, g string) *server.APIGroupInfo {
	t.Helper()
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	widgets := registry.MustNewStore(registry.Options[*Widget]{
		Resource: meta.GroupResource{Group: g, Resource: "widgets"}, Kind: "Widget", NamespaceScoped: true,
		ShortNames: []string{"wd"}, Categories: []string{"all"}, StorageVersion: "v1",
		Strategy: registry.DefaultStrategy[*Widget]{}, Storage: mem, StatusSubresource: true,
	})
	gadgets := registry.MustNewStore(registry.Options[*Gadget]{
		Resource: meta.GroupResource{Group: g, Resource: "gadgets"}, Kind: "Gadget", StorageVersion: "v1",
		Strategy: registry.DefaultStrategy[*Gadget]{}, Storage: mem,
	})
	beta, err := registry.ServeVersion(widgets, "v1beta1", registry.Conversion[*Widget, *Widget]{
		ToStorage:   func(w *Widget) (*Widget, error) { return w, nil },
		FromStorage: func(w *Widget) (*Widget, error) { c := *w; return &c, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return server.NewAPIGroupInfo(g).AddVersion("v1", registry.Serve(widgets), registry.Serve(gadgets)).AddVersion("v1beta1", beta)
}

func testConfig(authCalls *atomic.Int32) *server.Config {
	cfg := server.NewConfig()
	cfg.SecureServing.Certificate = &tls.Certificate{}
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Authenticator = authn.Func(func(*http.Request) (*authn.Response, bool, error) {
		if authCalls != nil {
			authCalls.Add(1)
		}
		return &authn.Response{User: authn.User{Name: "tester"}}, true, nil
	})
	return cfg
}

func newServer(t testing.TB, name string, delegate server.DelegationTarget, mutate ...func(*server.Config)) *server.GenericServer {
	t.Helper()
	cfg := testConfig(nil)
	for _, m := range mutate {
		m(cfg)
	}
	completed, err := cfg.Complete()
	if err != nil {
		t.Fatal(err)
	}
	s, err := completed.New(name, delegate)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func get(t testing.TB, h http.Handler, path, accept string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestDiscovery(t *testing.T) {
	s := newServer(t, "test", server.NewEmptyDelegate())
	if err := s.InstallAPIGroup(widgetGroup(t, "test.example.com")); err != nil {
		t.Fatal(err)
	}
	h := s.Handler
	for _, tc := range []struct {
		path, accept, want string
	}{
		{"/apis", "", `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"test.example.com","versions":[{"groupVersion":"test.example.com/v1","version":"v1"},{"groupVersion":"test.example.com/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"test.example.com/v1","version":"v1"}}]}`},
		{"/apis/test.example.com", "", `{"kind":"APIGroup","apiVersion":"v1","name":"test.example.com","versions":[{"groupVersion":"test.example.com/v1","version":"v1"},{"groupVersion":"test.example.com/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"test.example.com/v1","version":"v1"}}`},
		{"/apis/test.example.com/v1", "", `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"test.example.com/v1","resources":[` +
			`{"name":"gadgets","singularName":"gadget","namespaced":false,"kind":"Gadget","verbs":["create","delete","deletecollection","get","list","patch","update","watch"]},` +
			`{"name":"widgets","singularName":"widget","namespaced":true,"kind":"Widget","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["wd"],"categories":["all"]},` +
			`{"name":"widgets/status","singularName":"","namespaced":true,"kind":"Widget","verbs":["get","patch","update"]}]}`},
		{"/apis/test.example.com/v1beta1", "application/json", `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"test.example.com/v1beta1","resources":[` +
			`{"name":"widgets","singularName":"widget","namespaced":true,"kind":"Widget","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["wd"],"categories":["all"]},` +
			`{"name":"widgets/status","singularName":"","namespaced":true,"kind":"Widget","verbs":["get","patch","update"]}]}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			rec := get(t, h, tc.path, tc.accept)
			if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
			if got := strings.TrimSpace(rec.Body.String()); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if rec := get(t, h, "/apis/test.example.com/v2", ""); rec.Code != 404 {
		t.Errorf("unknown version: %d", rec.Code)
	}
	if rec := get(t, h, "/apis/other.example.com", ""); rec.Code != 404 {
		t.Errorf("unknown group: %d", rec.Code)
	}
	// No core group, no /api, in either form: 404, as
	// k8s.io/sample-apiserver answers (client-go takes it as "no legacy
	// resources").
	notFound := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`
	for _, accept := range []string{"", "application/json", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"} {
		if rec := get(t, h, "/api", accept); rec.Code != 404 || strings.TrimSpace(rec.Body.String()) != notFound {
			t.Errorf("/api (Accept %q): %d %s", accept, rec.Code, rec.Body)
		}
	}
}

func TestAggregatedDiscovery(t *testing.T) {
	s := newServer(t, "test", server.NewEmptyDelegate())
	if err := s.InstallAPIGroup(widgetGroup(t, "test.example.com")); err != nil {
		t.Fatal(err)
	}
	const kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
	rec := get(t, s.Handler, "/apis", kubectl)
	if ct := rec.Header().Get("Content-Type"); rec.Code != 200 || ct != "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" {
		t.Fatalf("%d %q", rec.Code, ct)
	}
	if !slices.Contains(rec.Header().Values("Vary"), "Accept") {
		t.Errorf("Vary %v", rec.Header().Values("Vary"))
	}
	var list meta.APIGroupDiscoveryList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "APIGroupDiscoveryList" || list.APIVersion != "apidiscovery.k8s.io/v2" || len(list.Items) != 1 {
		t.Fatalf("%s", rec.Body)
	}
	g := list.Items[0]
	if g.Name != "test.example.com" || len(g.Versions) != 2 || g.Versions[0].Version != "v1" || g.Versions[1].Version != "v1beta1" {
		t.Fatalf("group %+v", g)
	}
	v1 := g.Versions[0]
	if v1.Freshness != "Current" || len(v1.Resources) != 2 {
		t.Fatalf("v1 %+v", v1)
	}
	var w meta.APIResourceDiscovery
	for _, r := range v1.Resources {
		if r.Resource == "widgets" {
			w = r
		}
	}
	if w.Scope != "Namespaced" || w.SingularResource != "widget" || w.ResponseKind == nil || *w.ResponseKind != (meta.GroupVersionKindJSON{Group: "test.example.com", Version: "v1", Kind: "Widget"}) ||
		!slices.Equal(w.ShortNames, []string{"wd"}) || !slices.Equal(w.Categories, []string{"all"}) || len(w.Verbs) != 8 ||
		len(w.Subresources) != 1 || w.Subresources[0].Subresource != "status" || !slices.Equal(w.Subresources[0].Verbs, []string{"get", "patch", "update"}) {
		t.Errorf("widgets %+v", w)
	}
	for _, r := range v1.Resources {
		if r.Resource == "gadgets" && r.Scope != "Cluster" {
			t.Errorf("gadgets scope %q", r.Scope)
		}
	}

	rec = get(t, s.Handler, "/apis", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList")
	if ct := rec.Header().Get("Content-Type"); ct != "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList" || !strings.Contains(rec.Body.String(), `"apiVersion":"apidiscovery.k8s.io/v2beta1"`) {
		t.Errorf("v2beta1: %q %s", ct, rec.Body)
	}
	if rec = get(t, s.Handler, "/api", kubectl); rec.Code != 404 {
		t.Errorf("/api aggregated: %d %s", rec.Code, rec.Body)
	}
	// Legacy clients that prefer plain JSON get the legacy document.
	rec = get(t, s.Handler, "/apis", "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
	if rec.Header().Get("Content-Type") != "application/json" || !strings.Contains(rec.Body.String(), `"kind":"APIGroupList"`) {
		t.Errorf("plain JSON first: %s", rec.Body)
	}
}

func TestVersionAndRoot(t *testing.T) {
	s := newServer(t, "test", server.NewEmptyDelegate(), func(c *server.Config) {
		c.Version = server.VersionInfo{Major: "1", Minor: "2", GitVersion: "v1.2.3"}
	})
	if err := s.InstallAPIGroup(widgetGroup(t, "test.example.com")); err != nil {
		t.Fatal(err)
	}
	rec := get(t, s.Handler, "/version", "")
	var v server.VersionInfo
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || rec.Code != 200 || v.GitVersion != "v1.2.3" || v.Major != "1" {
		t.Errorf("/version %d %s", rec.Code, rec.Body)
	}
	if d := server.DefaultVersion(); d.GoVersion == "" || d.Platform == "" || d.GitVersion == "" {
		t.Errorf("default version %+v", d)
	}
	rec = get(t, s.Handler, "/", "")
	var root struct{ Paths []string }
	if err := json.Unmarshal(rec.Body.Bytes(), &root); err != nil || rec.Code != 200 {
		t.Fatalf("/ %d %s", rec.Code, rec.Body)
	}
	for _, p := range []string{"/apis", "/apis/test.example.com", "/apis/test.example.com/v1", "/healthz", "/livez", "/metrics", "/readyz", "/version"} {
		if !slices.Contains(root.Paths, p) {
			t.Errorf("/ does not list %s: %v", p, root.Paths)
		}
	}
	if slices.Contains(root.Paths, "/api") {
		t.Errorf("/ lists /api, which a server without a core group does not serve: %v", root.Paths)
	}
	if !slices.IsSorted(root.Paths) {
		t.Errorf("paths not sorted: %v", root.Paths)
	}
}

func TestHealth(t *testing.T) {
	var bad atomic.Bool
	bad.Store(true)
	s := newServer(t, "test", server.NewEmptyDelegate(), func(c *server.Config) {
		c.HealthChecks = []server.HealthCheck{{Name: "storage", Check: func(*http.Request) error {
			if bad.Load() {
				return errors.New("etcd is down")
			}
			return nil
		}}}
		c.ReadyzChecks = []server.HealthCheck{{Name: "informers", Check: func(*http.Request) error { return nil }}}
		c.LivezChecks = []server.HealthCheck{{Name: "deadlock", Check: func(*http.Request) error { return nil }}}
		// Health endpoints answer even to callers nobody can
		// authenticate; named checks, like the rest, need credentials.
		c.Authenticator = authn.Func(func(r *http.Request) (*authn.Response, bool, error) {
			if r.Header.Get("Accept") == "let-me-in" {
				return &authn.Response{User: authn.User{Name: "prober"}}, true, nil
			}
			return nil, false, nil
		})
	})
	h := s.Handler
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/healthz", 500, "[+]ping ok\n[-]storage failed: reason withheld\nhealthz check failed\n"},
		// The endpoints are public: a check's error is withheld, verbose
		// or not, as kube-apiserver does; it is served only at the
		// check's own path, to a user allowed to read it.
		{"/healthz?verbose", 500, "[+]ping ok\n[-]storage failed: reason withheld\nhealthz check failed\n"},
		{"/readyz?verbose", 500, "[+]ping ok\n[-]storage failed: reason withheld\n[+]informers ok\n[+]shutdown ok\nreadyz check failed\n"},
		{"/livez?verbose=1&exclude=deadlock", 500, "[+]ping ok\n[-]storage failed: reason withheld\n[+]deadlock excluded: ok\nlivez check failed\n"},
		{"/healthz?exclude=storage", 200, "ok"},
		{"/healthz?exclude=storage&verbose=1", 200, "[+]ping ok\n[+]storage excluded: ok\nhealthz check passed\n"},
		{"/healthz?exclude=storage&exclude=nope", 200, "ok"},
		{"/healthz?exclude=storage&exclude=nope&verbose", 200, "[+]ping ok\n[+]storage excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nhealthz check passed\n"},
		{"/healthz?exclude=zz&exclude=storage&exclude=aa&verbose", 200, "[+]ping ok\n[+]storage excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"aa\",\"zz\"\nhealthz check passed\n"},
		{"/livez?exclude=storage&verbose", 200, "[+]ping ok\n[+]storage excluded: ok\n[+]deadlock ok\nlivez check passed\n"},
		{"/readyz?exclude=storage&verbose", 200, "[+]ping ok\n[+]storage excluded: ok\n[+]informers ok\n[+]shutdown ok\nreadyz check passed\n"},
		{"/healthz/ping", 200, "ok"},
		{"/readyz/informers", 200, "ok"},
		{"/healthz/storage", 500, "internal server error: etcd is down\n"},
		{"/readyz/storage", 500, "internal server error: etcd is down\n"},
		{"/healthz/informers", 404, "404 page not found\n"},
		{"/livez/nope", 404, "404 page not found\n"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			accept := ""
			if strings.Count(tc.path, "/") > 1 {
				accept = "let-me-in"
				if rec := get(t, h, tc.path, ""); rec.Code != 401 {
					t.Errorf("named check without credentials: %d", rec.Code)
				}
			}
			rec := get(t, h, tc.path, accept)
			if rec.Code != tc.code || rec.Body.String() != tc.body {
				t.Errorf("%d %q\nwant %d %q", rec.Code, rec.Body, tc.code, tc.body)
			}
			if tc.code != 404 && !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
				t.Errorf("Content-Type %q", rec.Header().Get("Content-Type"))
			}
		})
	}
	bad.Store(false)
	if rec := get(t, h, "/healthz", ""); rec.Code != 200 || rec.Body.String() != "ok" {
		t.Errorf("healthy: %d %q", rec.Code, rec.Body)
	}
	// Other paths still need credentials.
	if rec := get(t, h, "/version", ""); rec.Code != 401 {
		t.Errorf("/version without credentials: %d", rec.Code)
	}
}
