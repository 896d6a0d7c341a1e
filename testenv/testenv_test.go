package testenv_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/testenv"
)

type widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Size            int `json:"size,omitempty"`
}

// buildWidgets serves widgets in example.com/v1.
func buildWidgets(c *server.Config) (*server.GenericServer, error) {
	resource := meta.GroupResource{Group: "example.com", Resource: "widgets"}
	s, err := c.Storage.For(resource)
	if err != nil {
		return nil, err
	}
	widgets, err := registry.NewStore(registry.Options[*widget]{
		Resource: resource, Kind: "Widget", NamespaceScoped: true, StorageVersion: "v1",
		Strategy: registry.DefaultStrategy[*widget]{}, Storage: s,
	})
	if err != nil {
		return nil, err
	}
	completed, err := c.Complete()
	if err != nil {
		return nil, err
	}
	srv, err := completed.New("widgets", server.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	return srv, srv.InstallAPIGroup(server.NewAPIGroupInfo("example.com").AddVersion("v1", registry.Serve(widgets)))
}

func do(t *testing.T, c *http.Client, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// TestStart: one call gives a complete server (the caller's API, RBAC,
// priority and fairness, the review APIs) and an admin's credentials.
func TestStart(t *testing.T) {
	env := testenv.Start(t, buildWidgets)
	if !strings.HasPrefix(env.Host, "https://127.0.0.1:") {
		t.Errorf("Host %q is not a loopback https URL", env.Host)
	}
	admin, err := env.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	widgets := env.Host + "/apis/example.com/v1/namespaces/ns/widgets"

	if code, m := do(t, admin, "POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"size":3}`); code != http.StatusCreated {
		t.Fatalf("admin create: %d %v", code, m)
	}
	if code, m := do(t, admin, "GET", widgets+"/w", ""); code != http.StatusOK || m["size"] != 3.0 {
		t.Errorf("admin get: %d %v", code, m)
	}
	code, m := do(t, admin, "POST", env.Host+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
		`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	if code != http.StatusCreated || !strings.Contains(mustJSON(t, m), `"username":"admin"`) {
		t.Errorf("SelfSubjectReview: %d %v", code, m)
	}
	if code, m := do(t, admin, "GET", env.Host+"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt", ""); code != http.StatusOK {
		t.Errorf("flow control's exempt FlowSchema: %d %v", code, m)
	}

	// Another user has what RBAC grants: nothing on widgets.
	bob, err := env.NewUser("bob", "developers")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(env.CAData)
	cert, err := tls.X509KeyPair(bob.CertData, bob.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	bobClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{cert}}}}
	if code, m := do(t, bobClient, "GET", widgets, ""); code != http.StatusForbidden || m["reason"] != "Forbidden" {
		t.Errorf("bob lists widgets: %d %v; want 403 from RBAC", code, m)
	}
	for _, path := range []string{env.Kubeconfig, bob.Kubeconfig} {
		if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), env.Host) {
			t.Errorf("kubeconfig %s does not name %s: %v", path, env.Host, err)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStartFailsOnBadFlags: a flag error fails the test with the options'
// message instead of leaving a half-started server.
func TestStartFailsOnBadFlags(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testenv.Start(ft, buildWidgets, testenv.Flags("--authorization-mode=Nonsense"))
	}()
	<-done
	if !strings.Contains(ft.msg, "Nonsense") {
		t.Errorf("Start with a bad flag failed with %q", ft.msg)
	}
}

// fatalRecorder records Fatalf and ends the goroutine, as testing.T does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
