package options

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/authz/review"
	"github.com/apikit-dev/apikit/certs"
)

// webhookKubeconfig writes a kubeconfig naming an https server with a CA,
// for options that only read it.
func webhookKubeconfig(t *testing.T) string {
	t.Helper()
	ca, err := certs.NewCA("webhook-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	if err := (certs.Kubeconfig{Server: "https://127.0.0.1:1/authorize", CAPEM: ca.CertPEM}).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAuthorizationChainOrder builds the authorizer from flags: the
// always-allowed paths and system:masters come first, then the modes in
// the order given, the first decisive one winning.
func TestAuthorizationChainOrder(t *testing.T) {
	alice := &authn.User{Name: "alice", Groups: []string{authn.AllAuthenticated}}
	root := &authn.User{Name: "root", Groups: []string{authn.SystemPrivilegedGroup, authn.AllAuthenticated}}
	anonymous := &authn.User{Name: authn.Anonymous, Groups: []string{authn.AllUnauthenticated}}
	list := authz.Attributes{Verb: "list", ResourceRequest: true, APIGroup: "wardle.example.com", Resource: "flunders", Namespace: "ns"}
	healthz := authz.Attributes{Verb: "get", Path: "/healthz"}
	for _, tc := range []struct {
		name  string
		args  []string
		user  *authn.User
		attrs authz.Attributes
		want  authz.Decision
	}{
		{"deny first", []string{"--authorization-mode=AlwaysDeny,AlwaysAllow"}, alice, list, authz.DecisionDeny},
		{"allow first", []string{"--authorization-mode=AlwaysAllow,AlwaysDeny"}, alice, list, authz.DecisionAllow},
		{"RBAC has no opinion, deny decides", []string{"--authorization-mode=RBAC,AlwaysDeny"}, alice, list, authz.DecisionDeny},
		{"RBAC has no opinion, allow decides", []string{"--authorization-mode=RBAC,AlwaysAllow"}, alice, list, authz.DecisionAllow},
		{"system:masters before AlwaysDeny", []string{"--authorization-mode=AlwaysDeny"}, root, list, authz.DecisionAllow},
		{"health for anyone", []string{"--authorization-mode=AlwaysDeny"}, anonymous, healthz, authz.DecisionAllow},
		{"health not always allowed when the flag is empty", []string{"--authorization-mode=AlwaysDeny", "--authorization-always-allow-paths="}, anonymous, healthz, authz.DecisionDeny},
		{"prefix path", []string{"--authorization-mode=AlwaysDeny", "--authorization-always-allow-paths=/metrics/*"}, anonymous,
			authz.Attributes{Verb: "get", Path: "/metrics/slis"}, authz.DecisionAllow},
		{"only non-resource paths", []string{"--authorization-mode=AlwaysDeny", "--authorization-always-allow-paths=/apis/*"}, anonymous,
			authz.Attributes{Verb: "get", ResourceRequest: true, Resource: "flunders", Path: "/apis/wardle.example.com/v1beta1/flunders"}, authz.DecisionDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := newTestOptions(t, tc.args...)
			c, err := o.Complete()
			if err != nil {
				t.Fatal(err)
			}
			cfg := newConfig(t, c)
			a := tc.attrs
			a.User = tc.user
			d, reason, err := cfg.Authorizer.Authorize(context.Background(), a)
			if err != nil || d != tc.want {
				t.Errorf("decision %v (%q, %v), want %v", d, reason, err, tc.want)
			}
			if o.Authorization.RuleResolver == nil {
				t.Error("no rule resolver")
			}
		})
	}
}

// userClient returns a client authenticating as user (in groups) with a
// certificate from the development CA in dataDir.
func userClient(t *testing.T, dataDir, user string, groups ...string) *http.Client {
	t.Helper()
	pki := filepath.Join(dataDir, "pki")
	ca, err := certs.ParseCA(mustRead(t, filepath.Join(pki, "ca.crt")), mustRead(t, filepath.Join(pki, "ca.key")))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.IssueClient(user, groups, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pair.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(mustRead(t, filepath.Join(pki, "ca.crt")))
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{cert}}}}
}

func doAs(t *testing.T, c *http.Client, base, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCommandServesRBAC runs the command with its default mode, RBAC: the
// bootstrap roles are served, a binding grants within a second and its
// deletion revokes within a second, the reviews answer for the caller.
func TestCommandServesRBAC(t *testing.T) {
	r := runCommand(t, "--storage-backend=memory")
	dir := r.dataDir
	code, body := r.do("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "")
	if code != http.StatusOK {
		t.Fatalf("clusterroles: %d %s", code, body)
	}
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user", "system:public-info-viewer", "system:auth-delegator"} {
		if !strings.Contains(body, `"name":"`+name+`"`) {
			t.Errorf("no ClusterRole %s", name)
		}
	}

	alice := userClient(t, dir, "alice")
	const widgets = "/apis/test.example.com/v1/widgets"
	code, body = doAs(t, alice, r.base, "GET", widgets, "")
	if code != http.StatusForbidden || !strings.Contains(body, `User \"alice\" cannot list resource \"widgets\" in API group \"test.example.com\" at the cluster scope"`) {
		t.Fatalf("alice before any binding: %d %s", code, body)
	}
	// Every authenticated user may discover and ask.
	if code, body := doAs(t, alice, r.base, "GET", "/apis", ""); code != http.StatusOK {
		t.Errorf("alice discovery: %d %s", code, body)
	}
	ssar := `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"list","group":"test.example.com","resource":"widgets"}}}`
	if code, body := doAs(t, alice, r.base, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", ssar); code != http.StatusCreated || !strings.Contains(body, `"allowed":false`) {
		t.Errorf("alice's review before the binding: %d %s", code, body)
	}

	for _, req := range []string{
		`{"metadata":{"name":"widget-reader"},"rules":[{"apiGroups":["test.example.com"],"resources":["widgets"],"verbs":["get","list"]}]}`,
	} {
		if code, body := r.do("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", req); code != http.StatusCreated {
			t.Fatalf("create role: %d %s", code, body)
		}
	}
	binding := `{"metadata":{"name":"alice-reads"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"widget-reader"},` +
		`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"}]}`
	if code, body := r.do("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding); code != http.StatusCreated {
		t.Fatalf("create binding: %d %s", code, body)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a second", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("the binding grants", func() bool { code, _ := doAs(t, alice, r.base, "GET", widgets, ""); return code == http.StatusOK })
	code, body = doAs(t, alice, r.base, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", ssar)
	var got review.SelfSubjectAccessReview
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != http.StatusCreated || !got.Status.Allowed ||
		got.Status.Reason != `RBAC: allowed by ClusterRoleBinding "alice-reads" of ClusterRole "widget-reader" to User "alice"` {
		t.Errorf("alice's review after the binding: %d %s", code, body)
	}
	// alice holds get and list, not delete: she cannot grant delete.
	escalate := `{"metadata":{"name":"widget-deleter"},"rules":[{"apiGroups":["test.example.com"],"resources":["widgets"],"verbs":["delete"]}]}`
	if code, body := doAs(t, alice, r.base, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", escalate); code != http.StatusForbidden {
		t.Errorf("alice escalating: %d %s", code, body)
	}

	if code, body := r.do("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/alice-reads", ""); code != http.StatusOK {
		t.Fatalf("delete binding: %d %s", code, body)
	}
	waitFor("the deleted binding stops granting", func() bool {
		code, _ := doAs(t, alice, r.base, "GET", widgets, "")
		return code == http.StatusForbidden
	})
}

// TestCommandWebhookAuthorizer runs the command with --authorization-mode=
// Webhook against a SubjectAccessReview server on loopback.
func TestCommandWebhookAuthorizer(t *testing.T) {
	asked := make(chan review.SubjectAccessReview, 100)
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sar review.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case asked <- sar:
		default:
		}
		sar.Status.Allowed = sar.Spec.User == "bob" && sar.Spec.ResourceAttributes != nil && sar.Spec.ResourceAttributes.Verb == "list"
		sar.Status.Reason = "the test's webhook says so"
		_ = json.NewEncoder(w).Encode(&sar)
	}))
	defer hook.Close()
	caPEM := pemOf(t, hook.Certificate())
	kc := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	if err := (certs.Kubeconfig{Server: hook.URL + "/authorize", CAPEM: caPEM}).WriteFile(kc); err != nil {
		t.Fatal(err)
	}
	r := runCommand(t, "--storage-backend=memory", "--authorization-mode=Webhook",
		"--authorization-webhook-config-file="+kc)
	dir := r.dataDir
	bob := userClient(t, dir, "bob", "devs")
	if code, body := doAs(t, bob, r.base, "GET", "/apis/test.example.com/v1/widgets", ""); code != http.StatusOK {
		t.Fatalf("bob list: %d %s", code, body)
	}
	sar := <-asked
	if sar.APIVersion != "authorization.k8s.io/v1" || sar.Kind != "SubjectAccessReview" || sar.Spec.User != "bob" ||
		len(sar.Spec.Groups) != 2 || sar.Spec.ResourceAttributes.Resource != "widgets" || sar.Spec.ResourceAttributes.Group != "test.example.com" {
		t.Errorf("the webhook was asked %+v", sar)
	}
	code, body := doAs(t, bob, r.base, "DELETE", "/apis/test.example.com/v1/widgets/w", "")
	if code != http.StatusForbidden || !strings.Contains(body, "the test's webhook says so") {
		t.Errorf("bob delete: %d %s", code, body)
	}
}

func pemOf(t *testing.T, c *x509.Certificate) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
