package system_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/system"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/backend"
)

type widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
}

// userHeader names the caller in these tests: the authenticator trusts it
// (a real server verifies certificates or tokens).
const userHeader = "X-Test-User"

// goCodeServer is a server built from Go code alone, running until its
// test ends.
type goCodeServer struct {
	*server.GenericServer
	// Base is its https:// address; Client trusts its serving
	// certificate.
	Base   string
	Client *http.Client
}

// startGoCodeServer builds and runs a server as a program without the
// options package does: storage assembled by storage/backend (memory),
// system.Defaults and system.Install, and one namespaced resource of T
// at example.com/v1 (its plural and kind given). The authenticator
// trusts userHeader; "admin" is in system:masters. It returns once
// /readyz passes, which waits for the post-start hooks: the RBAC index
// synced, the default flow control configuration written.
func startGoCodeServer[T meta.Object](tb testing.TB, name, resource, kind string) *goCodeServer {
	tb.Helper()
	// Storage assembled by the library, as the flags would have it.
	st := backend.New(backend.Config{Backend: backend.Memory, MaxObjectBytes: storage.DefaultMaxObjectBytes})
	tb.Cleanup(func() { st.Close() })
	cfg := server.NewConfig()
	cfg.Storage = st
	cfg.Logger = discardLogger()
	cfg.Authenticator = authn.Func(func(r *http.Request) (*authn.Response, bool, error) {
		name := r.Header.Get(userHeader)
		if name == "" {
			return nil, false, nil
		}
		groups := []string{authn.AllAuthenticated}
		if name == "admin" {
			groups = append(groups, authn.SystemPrivilegedGroup)
		}
		return &authn.Response{User: authn.User{Name: name, Groups: groups}}, true, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	cfg.SecureServing.Listener = ln
	sys, err := system.Defaults(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	gr := meta.GroupResource{Group: "example.com", Resource: resource}
	s, err := cfg.Storage.For(gr)
	if err != nil {
		tb.Fatal(err)
	}
	store, err := registry.NewStore(registry.Options[T]{Resource: gr, Kind: kind, NamespaceScoped: true,
		StorageVersion: "v1", Strategy: registry.DefaultStrategy[T]{}, Storage: s})
	if err != nil {
		tb.Fatal(err)
	}
	completed, err := cfg.Complete()
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := completed.New(name, server.NewEmptyDelegate())
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.InstallAPIGroup(server.NewAPIGroupInfo("example.com").AddVersion("v1", registry.Serve(store))); err != nil {
		tb.Fatal(err)
	}
	if err := system.Install(srv, sys); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.PrepareRun().Run(ctx) }()
	tb.Cleanup(func() { cancel(); <-done })

	pool := x509.NewCertPool()
	pool.AddCert(leaf(tb, cfg.SecureServing.Certificate))
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	tb.Cleanup(client.CloseIdleConnections)
	deadline := time.Now().Add(60 * time.Second)
	for {
		w := httptest.NewRecorder()
		srv.Handler.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		if w.Code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("not ready within 60 s: %d %s", w.Code, w.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &goCodeServer{GenericServer: srv, Base: "https://" + ln.Addr().String(), Client: client}
}

// TestServerFromGoCode builds a server with no options package, no flags:
// Defaults and Install give it RBAC, priority and fairness and the review
// APIs, as the server command has them.
func TestServerFromGoCode(t *testing.T) {
	srv := startGoCodeServer[*widget](t, "go-code", "widgets", "Widget")
	client, base := srv.Client, srv.Base
	do := func(user, method, path, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.Header.Set(userHeader, user)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	poll := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 60s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	if code, m := do("admin", "GET", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt", ""); code != http.StatusOK {
		t.Errorf("flow control's exempt FlowSchema: %d %v", code, m)
	}
	if code, m := do("admin", "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin", ""); code != http.StatusOK {
		t.Errorf("the bootstrap role cluster-admin: %d %v", code, m)
	}
	code, m := do("bob", "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	if code != http.StatusCreated || m["status"].(map[string]any)["userInfo"].(map[string]any)["username"] != "bob" {
		t.Errorf("SelfSubjectReview as bob: %d %v", code, m)
	}

	// RBAC decides: bob may not list widgets until a binding says so.
	widgetsPath := "/apis/example.com/v1/namespaces/ns/widgets"
	if code, _ := do("bob", "GET", widgetsPath, ""); code != http.StatusForbidden {
		t.Errorf("bob lists widgets without a binding: %d, want 403", code)
	}
	if code, m := do("admin", "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/ns/rolebindings",
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"bob-view"},
		"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},
		"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bob"}]}`); code != http.StatusCreated {
		t.Fatalf("binding bob: %d %v", code, m)
	}
	poll("bob's binding takes effect", func() bool { code, _ := do("bob", "GET", widgetsPath, ""); return code == http.StatusOK })
	code, m = do("bob", "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
		`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":"ns","verb":"list","group":"example.com","resource":"widgets"}}}`)
	if code != http.StatusCreated || m["status"].(map[string]any)["allowed"] != true {
		t.Errorf("SelfSubjectAccessReview as bob: %d %v", code, m)
	}
}

func leaf(tb testing.TB, c *tls.Certificate) *x509.Certificate {
	tb.Helper()
	if c.Leaf != nil {
		return c.Leaf
	}
	l, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
