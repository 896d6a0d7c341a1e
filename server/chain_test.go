package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apikit-dev/apikit/server"
)

func TestDelegationChain(t *testing.T) {
	inner := newServer(t, "inner", server.NewEmptyDelegate())
	if err := inner.InstallAPIGroup(widgetGroup(t, "a.example.com")); err != nil {
		t.Fatal(err)
	}
	inner.AddHealthChecks(server.HealthCheck{Name: "inner-check", Check: func(*http.Request) error { return nil }})
	inner.AddReadyzChecks(server.HealthCheck{Name: "inner-ready", Check: func(*http.Request) error { return nil }})
	if err := inner.AddPostStartHook("inner-hook", func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var authCalls atomic.Int32
	cfg := testConfig(&authCalls)
	completed, err := cfg.Complete()
	if err != nil {
		t.Fatal(err)
	}
	outer, err := completed.New("outer", inner)
	if err != nil {
		t.Fatal(err)
	}
	if err := outer.InstallAPIGroup(widgetGroup(t, "b.example.com")); err != nil {
		t.Fatal(err)
	}
	if err := outer.InstallAPIGroup(widgetGroup(t, "a.example.com")); err == nil {
		t.Error("installed a group the delegate serves")
	}
	if outer.NextDelegate() != inner || inner.NextDelegate() == nil || inner.NextDelegate().NextDelegate() != nil {
		t.Error("delegate links")
	}

	do := func(method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		before := authCalls.Load()
		outer.Handler.ServeHTTP(rec, r)
		if n := authCalls.Load() - before; n != 1 {
			t.Errorf("%s %s authenticated %d times; the chain runs once, in the outermost server", method, path, n)
		}
		return rec
	}

	// The outer server serves the inner's resources...
	if rec := do("POST", "/apis/a.example.com/v1/namespaces/ns/widgets", `{"metadata":{"name":"w"}}`); rec.Code != 201 {
		t.Errorf("create through the chain: %d %s", rec.Code, rec.Body)
	}
	if rec := do("GET", "/apis/a.example.com/v1beta1/namespaces/ns/widgets/w", ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"apiVersion":"a.example.com/v1beta1"`) {
		t.Errorf("get through the chain: %d %s", rec.Code, rec.Body)
	}
	if rec := do("GET", "/apis/b.example.com/v1/gadgets", ""); rec.Code != 200 {
		t.Errorf("outer's own group: %d %s", rec.Code, rec.Body)
	}
	// ...its discovery...
	rec := do("GET", "/apis", "")
	var groups struct {
		Groups []struct{ Name string } `json:"groups"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &groups); err != nil || len(groups.Groups) != 2 || groups.Groups[0].Name != "b.example.com" || groups.Groups[1].Name != "a.example.com" {
		t.Errorf("/apis %s", rec.Body)
	}
	for _, p := range []string{"/apis/a.example.com", "/apis/a.example.com/v1", "/apis/b.example.com/v1beta1"} {
		if rec := do("GET", p, ""); rec.Code != 200 {
			t.Errorf("%s: %d", p, rec.Code)
		}
	}
	rec = do("GET", "/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
	if !strings.Contains(rec.Body.String(), `"name":"a.example.com"`) || !strings.Contains(rec.Body.String(), `"name":"b.example.com"`) {
		t.Errorf("aggregated discovery %s", rec.Body)
	}
	// ...its health and hooks.
	rec = do("GET", "/readyz?verbose", "")
	for _, want := range []string{"[+]ping ok\n", "[+]inner-check ok\n", "[+]inner-ready ok\n", "[-]poststarthook/inner-hook failed: reason withheld\n", "[+]shutdown ok\n"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("readyz lacks %q:\n%s", want, rec.Body)
		}
	}
	if strings.Count(rec.Body.String(), "[+]ping ok") != 1 {
		t.Errorf("checks of both servers listed twice:\n%s", rec.Body)
	}
	rec = do("GET", "/livez?verbose", "")
	if !strings.Contains(rec.Body.String(), "[+]inner-check ok\n") || strings.Contains(rec.Body.String(), "inner-ready") {
		t.Errorf("livez:\n%s", rec.Body)
	}
	if _, ok := outer.PostStartHooks()["inner-hook"]; !ok {
		t.Error("the outer server does not run the inner's post-start hook")
	}
	// Paths nobody serves end at the empty delegate.
	rec = do("GET", "/apis/c.example.com/v1/things", "")
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), `"reason":"NotFound"`) {
		t.Errorf("unknown path: %d %s", rec.Code, rec.Body)
	}
	if got := len(outer.WebServices()); got != 4 {
		t.Errorf("%d web services in the chain, want 4", got)
	}
}
