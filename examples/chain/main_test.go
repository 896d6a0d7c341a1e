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
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// TestChain starts the three-server chain on loopback and checks that the
// outermost serves every group's resources, discovery and health.
func TestChain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := server.NewConfig()
	c.Storage = storage.Shared(memory.New())
	c.SecureServing.Listener = ln
	c.Authenticator = authn.Func(func(*http.Request) (*authn.Response, bool, error) {
		return &authn.Response{User: authn.User{Name: "tester"}}, true, nil
	})
	outer, err := newChain(c)
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
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
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
	waitReady(t, func() bool { code, _ := do("GET", "/readyz", ""); return code == 200 })

	for _, g := range []string{"core", "front"} {
		path := "/apis/" + g + ".example.com/v1/namespaces/default/notes"
		if code, body := do("POST", path, `{"metadata":{"name":"n1"},"text":"from `+g+`"}`); code != http.StatusCreated {
			t.Fatalf("create in %s: %d %s", g, code, body)
		}
		code, body := do("GET", path+"/n1", "")
		if code != http.StatusOK || !strings.Contains(body, `"text":"from `+g+`"`) || !strings.Contains(body, `"apiVersion":"`+g+`.example.com/v1"`) {
			t.Fatalf("get in %s: %d %s", g, code, body)
		}
	}

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
	if got, want := strings.Join(names, ","), "front.example.com,core.example.com,apiextensions.k8s.io"; got != want {
		t.Errorf("/apis groups = %s, want %s", got, want)
	}
	for _, p := range []string{"/apis/apiextensions.k8s.io", "/apis/core.example.com/v1"} {
		if code, body := do("GET", p, ""); code != 200 {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
	}
	_, health := do("GET", "/healthz?verbose", "")
	for _, c := range []string{"[+]extensions-ready ok", "[+]core-ready ok", "[+]front-ready ok"} {
		if !strings.Contains(health, c) {
			t.Errorf("/healthz?verbose lacks %q:\n%s", c, health)
		}
	}
	if code, body := do("GET", "/openapi/v2", ""); code != 200 || !strings.Contains(body, "io.k8s.apiextensions.v1.CustomResourceDefinition") {
		t.Errorf("GET /openapi/v2: %d %.300s", code, body)
	}
	code, body := do("GET", "/openapi/v3", "")
	var index struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &index); code != 200 || err != nil {
		t.Fatalf("GET /openapi/v3: %d %.300s", code, body)
	}
	for p, u := range index.Paths {
		if code, body := do("GET", u.URL, ""); code != 200 {
			t.Errorf("GET %s (%s): %d %.300s", u.URL, p, code, body)
		}
	}
	if code, body := do("GET", "/apis/nowhere.example.com/v1/things", ""); code != 404 || !strings.Contains(body, `"kind":"Status"`) {
		t.Errorf("unknown path: %d %s", code, body)
	}
}

func waitReady(t *testing.T, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatal("server did not become ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
