package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/testenv"
)

// TestServesCustomResources runs the server as its command does (flags,
// system APIs), alone as bench -crd runs it, and checks that it serves a
// CRD's custom resources with the schema's default, and discovery.
func TestServesCustomResources(t *testing.T) {
	env := testenv.Start(t, newServer)
	client, err := env.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	defer client.CloseIdleConnections()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, env.Host+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	const crd = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"widgets.bench.example.com"},
		"spec":{"group":"bench.example.com","scope":"Namespaced",
		"names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object",
		"properties":{"spec":{"type":"object","properties":{"size":{"type":"integer","default":3}}}}}}}]}}`
	if code, body := do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd); code != http.StatusCreated {
		t.Fatalf("creating the CRD: %d %s", code, body)
	}
	const widgets = "/apis/bench.example.com/v1/namespaces/default/widgets"
	// Generous: the machine running the tests may be loaded.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if code, _ := do("GET", widgets, ""); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the CRD's custom resources are not served within 30s")
		}
	}
	if code, body := do("POST", widgets, `{"apiVersion":"bench.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{}}`); code != http.StatusCreated {
		t.Fatalf("creating a widget: %d %s", code, body)
	}
	if code, body := do("GET", widgets+"/w", ""); code != http.StatusOK || !strings.Contains(body, `"spec":{"size":3}`) {
		t.Errorf("GET the widget: %d %s; want it defaulted", code, body)
	}
	_, apis := do("GET", "/apis", "")
	for _, g := range []string{`"name":"apiextensions.k8s.io"`, `"name":"bench.example.com"`, `"name":"rbac.authorization.k8s.io"`} {
		if !strings.Contains(apis, g) {
			t.Errorf("/apis lacks %s: %s", g, apis)
		}
	}
}
