package aggregator_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server/aggregator"
)

func TestProxy(t *testing.T) {
	resolver := &testResolver{m: aggregator.StaticResolver{}}
	h := newHarness(t, resolver)
	b := newBackend(t, h.ca)
	resolver.set("ns/api", b.addr)
	h.register(h.ca.CertPEM)
	h.waitCondition("v1.test.example.com", aggregator.ConditionTrue, aggregator.ReasonPassed, 10*time.Second)

	t.Run("the user in front-proxy headers", func(t *testing.T) {
		forged := http.Header{
			"X-Remote-User":        {"admin"},
			"X-Remote-Group":       {"system:masters"},
			"X-Remote-Extra-Scope": {"everything"},
			"x-remote-uid":         {"0"},
		}
		resp := h.do("GET", "/apis/test.example.com/v1/namespaces/ns/widgets?limit=10&continue=abc", nil, forged)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		r := b.last("/apis/test.example.com/v1/namespaces/ns/widgets")
		if r == nil {
			t.Fatal("the backend saw no request")
		}
		if r.URL.RawQuery != "limit=10&continue=abc" {
			t.Errorf("query %q", r.URL.RawQuery)
		}
		if r.ProtoMajor != 2 {
			t.Errorf("the backend was reached over %s, want HTTP/2", r.Proto)
		}
		if err := verifyProxy(r, h.proxyCA); err != nil {
			t.Errorf("front-proxy certificate: %v", err)
		}
		if got := r.Header.Get("Authorization"); got != "" {
			t.Errorf("the client's credentials reached the backend: %q", got)
		}
		want := map[string][]string{
			"X-Remote-User":                        {"alice"},
			"X-Remote-Uid":                         {"u-1"},
			"X-Remote-Group":                       {"devs", "system:authenticated"},
			"X-Remote-Extra-Scopes":                {"read", "write"},
			"X-Remote-Extra-Example.com%2fteam%25": {"blue"},
		}
		for k, v := range want {
			if got := r.Header.Values(k); !slices.Equal(got, v) {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		if got := r.Header.Values("X-Remote-Extra-Scope"); len(got) != 0 {
			t.Errorf("a forged extra header reached the backend: %q", got)
		}
		if r.Header.Get("X-Forwarded-For") != "127.0.0.1" {
			t.Errorf("X-Forwarded-For = %q", r.Header.Get("X-Forwarded-For"))
		}
	})

	t.Run("the headers read back by a delegated server", func(t *testing.T) {
		r := b.last("/apis/test.example.com/v1/namespaces/ns/widgets")
		rh, err := authn.NewRequestHeader(authn.RequestHeaderConfig{
			CAs:             authn.StaticCAs{Pool: pool(h.proxyCA)},
			UsernameHeaders: []string{"X-Remote-User"}, UIDHeaders: []string{"X-Remote-Uid"},
			GroupHeaders: []string{"X-Remote-Group"}, ExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
		})
		if err != nil {
			t.Fatal(err)
		}
		resp, ok, err := rh.AuthenticateRequest(r)
		if err != nil || !ok {
			t.Fatalf("AuthenticateRequest: %v %v", ok, err)
		}
		u := resp.User
		if u.Name != "alice" || u.UID != "u-1" || !slices.Equal(u.Groups, []string{"devs", "system:authenticated"}) ||
			!slices.Equal(u.Extra["scopes"], []string{"read", "write"}) || !slices.Equal(u.Extra["example.com/team%"], []string{"blue"}) {
			t.Errorf("the backend reads %+v", u)
		}
	})

	t.Run("watch streams", func(t *testing.T) {
		resp := h.do("GET", "/apis/test.example.com/v1/namespaces/ns/widgets?watch=true", nil, nil)
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		lines := bufio.NewReader(resp.Body)
		for i, ev := range []string{`{"type":"ADDED"}`, `{"type":"MODIFIED"}`} {
			// The backend writes the next event only once the previous
			// one was read here: nothing is buffered on the way.
			select {
			case b.events <- ev:
			case <-time.After(5 * time.Second):
				t.Fatalf("event %d: the backend's watch is not open", i)
			}
			got, err := lines.ReadString('\n')
			if err != nil || strings.TrimSpace(got) != ev {
				t.Fatalf("event %d: %q %v", i, got, err)
			}
		}
	})

	t.Run("upgrade", func(t *testing.T) {
		got, err := h.upgrade("hello")
		if err != nil {
			t.Fatal(err)
		}
		if got != "echo: hello" {
			t.Errorf("echoed %q", got)
		}
	})

	t.Run("a backend that stops answers 503, then comes back", func(t *testing.T) {
		addr := b.addr
		b.stop()
		start := time.Now()
		code, body := h.get("/apis/test.example.com/v1/namespaces/ns/widgets")
		if code != http.StatusServiceUnavailable {
			t.Errorf("backend down: %d %s", code, body)
		}
		h.waitCondition("v1.test.example.com", aggregator.ConditionFalse, aggregator.ReasonFailedDiscoveryCheck, 20*time.Second)
		t.Logf("unavailable %v after the backend stopped", time.Since(start))
		if c := h.condition("v1.test.example.com"); !strings.Contains(c.Message, "failing or missing response from https://"+addr+"/apis/test.example.com/v1") {
			t.Errorf("message %q", c.Message)
		}
		begin := time.Now()
		code, body = h.get("/apis/test.example.com/v1/namespaces/ns/widgets")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, `"reason":"ServiceUnavailable"`) || time.Since(begin) > time.Second {
			t.Errorf("unavailable: %d %s in %v", code, body, time.Since(begin))
		}
		b.start(addr)
		h.waitCondition("v1.test.example.com", aggregator.ConditionTrue, aggregator.ReasonPassed, 20*time.Second)
		if code, body := h.get("/apis/test.example.com/v1/namespaces/ns/widgets"); code != 200 {
			t.Errorf("back: %d %s", code, body)
		}
	})
}

func TestAvailabilityReasons(t *testing.T) {
	resolver := &testResolver{m: aggregator.StaticResolver{}}
	h := newHarness(t, resolver)
	b := newBackend(t, h.ca)

	// Not in the table: ServiceNotFound.
	h.register(h.ca.CertPEM)
	h.waitCondition("v1.test.example.com", aggregator.ConditionFalse, aggregator.ReasonServiceNotFound, 20*time.Second)
	if code, _ := h.get("/apis/test.example.com/v1/namespaces/ns/widgets"); code != http.StatusServiceUnavailable {
		t.Errorf("ServiceNotFound: %d", code)
	}
	if c := h.condition("v1.test.example.com"); c.Message != `service/api in "ns" is not in the --service-endpoint table: service not found` {
		t.Errorf("message %q", c.Message)
	}

	// The resolver learns the service; the next probe passes.
	resolver.set("ns/api", b.addr)
	h.waitCondition("v1.test.example.com", aggregator.ConditionTrue, aggregator.ReasonPassed, 20*time.Second)

	// A CA bundle that does not sign the backend's certificate.
	other, err := newCA("other")
	if err != nil {
		t.Fatal(err)
	}
	resp := h.do("PATCH", "/apis/apiregistration.k8s.io/v1/apiservices/v1.test.example.com",
		strings.NewReader(`{"spec":{"caBundle":"`+b64(other.CertPEM)+`"}}`), http.Header{"Content-Type": {"application/merge-patch+json"}})
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("patch: %d", resp.StatusCode)
	}
	h.waitCondition("v1.test.example.com", aggregator.ConditionFalse, aggregator.ReasonFailedDiscoveryCheck, 20*time.Second)
	if c := h.condition("v1.test.example.com"); !strings.Contains(c.Message, "certificate signed by unknown authority") {
		t.Errorf("message %q", c.Message)
	}
	if code, _ := h.get("/apis/test.example.com/v1/namespaces/ns/widgets"); code != http.StatusServiceUnavailable {
		t.Errorf("a backend whose certificate is not trusted: %d", code)
	}
	if n := len(b.requestsTo("/apis/test.example.com/v1/namespaces")); n != 0 {
		t.Errorf("%d requests reached the backend while it was not available", n)
	}
}

func TestDiscoveryAndOpenAPI(t *testing.T) {
	resolver := &testResolver{m: aggregator.StaticResolver{}}
	h := newHarness(t, resolver)
	b := newBackend(t, h.ca)
	resolver.set("ns/api", b.addr)
	h.register(h.ca.CertPEM)
	h.waitCondition("v1.test.example.com", aggregator.ConditionTrue, aggregator.ReasonPassed, 10*time.Second)

	t.Run("local APIServices", func(t *testing.T) {
		for _, name := range []string{"v1.apiregistration.k8s.io", "v1.local.example.com"} {
			s, _, err := h.agg.Store.Get(context.Background(), "", name, meta.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Spec.Service != nil || s.Labels[aggregator.AutomanagedLabel] != "onstart" {
				t.Errorf("%s: %+v", name, s)
			}
			if c := s.Status.Condition(aggregator.Available); c == nil || c.Status != aggregator.ConditionTrue || c.Reason != aggregator.ReasonLocal {
				t.Errorf("%s: Available %+v", name, c)
			}
		}
		// Local group-versions are served by the chain.
		if code, body := h.get("/apis/local.example.com/v1/things"); code != 200 {
			t.Errorf("local: %d %s", code, body)
		}
	})

	t.Run("/apis", func(t *testing.T) {
		_, body := h.get("/apis")
		var list meta.APIGroupList
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, g := range list.Groups {
			names = append(names, g.Name)
		}
		// By groupPriorityMinimum: apiregistration (17800), test (2000), local (1000).
		if want := []string{"apiregistration.k8s.io", "test.example.com", "local.example.com"}; !slices.Equal(names, want) {
			t.Errorf("groups %q, want %q", names, want)
		}
		code, body := h.get("/apis/test.example.com")
		if code != 200 || !strings.Contains(body, `"preferredVersion":{"groupVersion":"test.example.com/v1","version":"v1"}`) {
			t.Errorf("/apis/test.example.com: %d %s", code, body)
		}
	})

	aggregated := func() map[string]meta.APIVersionDiscovery {
		t.Helper()
		resp := h.do("GET", "/apis", nil, http.Header{"Accept": {"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}})
		defer resp.Body.Close()
		var list meta.APIGroupDiscoveryList
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			t.Fatal(err)
		}
		out := map[string]meta.APIVersionDiscovery{}
		for _, g := range list.Items {
			for _, v := range g.Versions {
				out[g.Name+"/"+v.Version] = v
			}
		}
		return out
	}
	t.Run("aggregated", func(t *testing.T) {
		all := aggregated()
		v := all["test.example.com/v1"]
		if v.Freshness != meta.DiscoveryFresh || len(v.Resources) != 1 || v.Resources[0].Resource != "widgets" ||
			v.Resources[0].Scope != meta.ScopeNamespace || len(v.Resources[0].Subresources) != 1 ||
			v.Resources[0].Subresources[0].Subresource != "status" || v.Resources[0].ResponseKind.Kind != "Widget" {
			t.Errorf("test.example.com/v1: %+v", v)
		}
		if l := all["local.example.com/v1"]; len(l.Resources) != 1 || l.Resources[0].Resource != "things" {
			t.Errorf("local.example.com/v1: %+v", l)
		}
		if _, ok := all["apiregistration.k8s.io/v1"]; !ok {
			t.Error("apiregistration.k8s.io/v1 missing")
		}
	})

	t.Run("refreshed when the backend changes", func(t *testing.T) {
		b.mu.Lock()
		b.resources = "gadgets"
		b.mu.Unlock()
		deadline := time.Now().Add(5 * time.Second)
		polls := 0
		for polls = 0; ; polls++ {
			v := aggregated()["test.example.com/v1"]
			if len(v.Resources) == 2 && v.Resources[0].Resource == "widgets" && v.Resources[1].Resource == "gadgets" && v.Resources[1].Scope == meta.ScopeCluster {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the new resource did not appear: %+v", v)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("the new resource appeared after %d polls", polls)
	})

	t.Run("OpenAPI", func(t *testing.T) {
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, v2 := h.get("/openapi/v2")
			_, v3 := h.get("/openapi/v3")
			if strings.Contains(v2, `"/apis/test.example.com/v1/widgets"`) && strings.Contains(v3, `"apis/test.example.com/v1"`) {
				if strings.Contains(v2, "/apis/other.example.com/") {
					t.Error("a backend path outside its group-version was merged")
				}
				if !strings.Contains(v2, `"/apis/apiregistration.k8s.io/v1/apiservices"`) || !strings.Contains(v3, `"apis/local.example.com/v1"`) {
					t.Error("the local documents are missing")
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the backend's documents were not merged:\n%.300s\n%s", v2, v3)
			}
			time.Sleep(50 * time.Millisecond)
		}
		code, doc := h.get("/openapi/v3/apis/test.example.com/v1")
		if code != 200 || !strings.Contains(doc, `"title":"backend"`) {
			t.Errorf("v3 document: %d %s", code, doc)
		}
	})

	t.Run("unavailable: stale, still listed", func(t *testing.T) {
		b.stop()
		h.waitCondition("v1.test.example.com", aggregator.ConditionFalse, aggregator.ReasonFailedDiscoveryCheck, 20*time.Second)
		if v := aggregated()["test.example.com/v1"]; v.Freshness != meta.DiscoveryStale {
			t.Errorf("freshness %q", v.Freshness)
		}
		if _, body := h.get("/apis"); !strings.Contains(body, `"test.example.com"`) {
			t.Errorf("/apis lost the group: %s", body)
		}
	})

	t.Run("deleted", func(t *testing.T) {
		resp := h.do("DELETE", "/apis/apiregistration.k8s.io/v1/apiservices/v1.test.example.com", nil, nil)
		resp.Body.Close()
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, body := h.get("/apis")
			_, v3 := h.get("/openapi/v3")
			if !strings.Contains(body, "test.example.com") && !strings.Contains(v3, "test.example.com") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("still listed: %s %s", body, v3)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if code, _ := h.get("/apis/test.example.com/v1/namespaces/ns/widgets"); code != http.StatusNotFound {
			t.Errorf("after delete: %d", code)
		}
	})
}
