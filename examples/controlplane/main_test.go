package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/aggregator"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// TestChain starts the chain on loopback, on memory storage, and checks
// that the outermost serves every server's groups (the core group on
// /api/v1), discovery in kube's group order, health, OpenAPI, and that
// NamespaceLifecycle guards the extensions server's custom resources too.
func TestChain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := server.NewConfig()
	c.Storage = storage.Shared(memory.New())
	c.SecureServing.Listener = ln
	c.GarbageCollection = true
	c.Authenticator = authn.Func(func(*http.Request) (*authn.Response, bool, error) {
		return &authn.Response{User: authn.User{Name: "tester"}}, true, nil
	})
	outer, err := build(c, aggregator.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- outer.PrepareRun().Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	base := "https://" + ln.Addr().String()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	eventually := func(what string, ok func() (bool, string)) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			good, msg := ok()
			if good {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s", what, msg)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	eventually("ready", func() (bool, string) { code, body := do("GET", "/readyz?verbose", ""); return code == 200, body })

	// The core server's namespaces, and NamespaceLifecycle in front of the
	// extensions server's custom resources.
	if code, body := do("POST", "/api/v1/namespaces", `{"metadata":{"name":"team-a"}}`); code != http.StatusCreated {
		t.Fatalf("create namespace: %d %s", code, body)
	}
	if code, body := do("POST", "/api/v1/namespaces/team-a/configmaps", `{"metadata":{"name":"c"},"data":{"k":"v"}}`); code != http.StatusCreated {
		t.Fatalf("create configmap: %d %s", code, body)
	}
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"notes.example.com"},
	  "spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"notes","singular":"note","kind":"Note"},
	  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	if code, body := do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd); code != http.StatusCreated {
		t.Fatalf("create CRD: %d %s", code, body)
	}
	eventually("a note in team-a", func() (bool, string) {
		code, body := do("POST", "/apis/example.com/v1/namespaces/team-a/notes", `{"apiVersion":"example.com/v1","kind":"Note","metadata":{"name":"n1"}}`)
		return code == http.StatusCreated, body
	})
	if code, body := do("POST", "/apis/example.com/v1/namespaces/nowhere/notes", `{"apiVersion":"example.com/v1","kind":"Note","metadata":{"name":"n1"}}`); code != http.StatusNotFound ||
		!strings.Contains(body, `namespaces \"nowhere\" not found`) {
		t.Errorf("a note in a namespace that does not exist: %d %s", code, body)
	}
	eventually("the CRD's APIService", func() (bool, string) {
		code, body := do("GET", "/apis/apiregistration.k8s.io/v1/apiservices/v1.example.com", "")
		return code == 200 && strings.Contains(body, `"kube-aggregator.kubernetes.io/automanaged":"true"`), body
	})

	_, body := do("GET", "/apis", "")
	var groups struct {
		Groups []struct{ Name string } `json:"groups"`
	}
	if err := json.Unmarshal([]byte(body), &groups); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.Name)
	}
	// By kube-apiserver's group priorities, the CRD group (1000) last.
	if got, want := strings.Join(names, ","), "apiregistration.k8s.io,events.k8s.io,apiextensions.k8s.io,coordination.k8s.io,example.com"; got != want {
		t.Errorf("/apis groups = %s, want %s", got, want)
	}
	if code, body := do("GET", "/api/v1", ""); code != 200 || !strings.Contains(body, `"name":"serviceaccounts/token"`) {
		t.Errorf("GET /api/v1: %d %.300s", code, body)
	}
	_, health := do("GET", "/readyz?verbose", "")
	for _, hook := range []string{"start-apiextensions-controllers", "start-system-namespaces-controller", "core/namespace-controller",
		"kube-apiserver-autoregistration", "start-garbage-collector-controller"} {
		if !strings.Contains(health, "[+]poststarthook/"+hook+" ok") {
			t.Errorf("/readyz?verbose lacks %s:\n%s", hook, health)
		}
	}
	if code, body := do("GET", "/openapi/v2", ""); code != 200 || !strings.Contains(body, "io.k8s.apiextensions.v1.CustomResourceDefinition") ||
		!strings.Contains(body, `"/api/v1/namespaces/{namespace}/configmaps"`) {
		t.Errorf("GET /openapi/v2: %d %.300s", code, body)
	}
	if code, body := do("GET", "/apis/nowhere.example.com/v1/things", ""); code != 404 || !strings.Contains(body, `"kind":"Status"`) {
		t.Errorf("unknown path: %d %s", code, body)
	}
}
