package options

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/authn"
	authnreview "github.com/apikit-dev/apikit/authn/review"
	"github.com/apikit-dev/apikit/authz"
	authzreview "github.com/apikit-dev/apikit/authz/review"
	"github.com/apikit-dev/apikit/certs"
)

// frontServer is a kube-apiserver stand-in for a delegated server: it
// reviews tokens and access, and serves the
// extension-apiserver-authentication ConfigMap (or the status set).
type frontServer struct {
	srv *httptest.Server

	mu          sync.Mutex
	cmStatus    int
	cmData      map[string]string
	cmGets      int
	audiences   [][]string // of each TokenReview
	reviewsUser []string   // of each SubjectAccessReview
}

func newFrontServer(t *testing.T, cmData map[string]string) *frontServer {
	t.Helper()
	f := &frontServer{cmStatus: http.StatusOK, cmData: cmData}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *frontServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer delegate-token" {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/apis/authentication.k8s.io/v1/tokenreviews":
		var tr authnreview.TokenReview
		json.NewDecoder(r.Body).Decode(&tr)
		f.audiences = append(f.audiences, tr.Spec.Audiences)
		if tr.Spec.Token == "front-token-0123" {
			tr.Status = authnreview.TokenReviewStatus{Authenticated: true,
				User: authnreview.UserInfo{Username: "grace", Groups: []string{"devs"}}}
		}
		json.NewEncoder(w).Encode(&tr)
	case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
		var sar authzreview.SubjectAccessReview
		json.NewDecoder(r.Body).Decode(&sar)
		f.reviewsUser = append(f.reviewsUser, sar.Spec.User)
		if ra := sar.Spec.ResourceAttributes; sar.Spec.User == "grace" && ra != nil && ra.Resource == "flunders" && ra.Verb == "list" {
			sar.Status = authzreview.SubjectAccessReviewStatus{Allowed: true, Reason: "the front server says so"}
		}
		json.NewEncoder(w).Encode(&sar)
	case "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication":
		f.cmGets++
		w.WriteHeader(f.cmStatus)
		if f.cmStatus == http.StatusOK {
			json.NewEncoder(w).Encode(map[string]any{"kind": "ConfigMap", "apiVersion": "v1",
				"metadata": map[string]any{"name": "extension-apiserver-authentication", "namespace": "kube-system", "resourceVersion": "3"},
				"data":     f.cmData})
		}
	default:
		http.NotFound(w, r)
	}
}

// kubeconfig writes the kubeconfig of the front server's base URL.
func (f *frontServer) kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "front.kubeconfig")
	k := certs.Kubeconfig{Server: f.srv.URL, Token: "delegate-token",
		CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})}
	if err := k.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func leafOf(t *testing.T, ca *certs.CA, user string) *x509.Certificate {
	t.Helper()
	pair, err := ca.IssueClient(user, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pair.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// TestDelegatedMode: with --authentication-kubeconfig and
// --authorization-kubeconfig, tokens are reviewed by the front server,
// its ConfigMap's front proxy and client CA are trusted (with the
// development PKI's CA), and what the modes do not allow is asked of it.
func TestDelegatedMode(t *testing.T) {
	proxyCA, frontCA := newTestCA(t, "front-proxy-ca"), newTestCA(t, "front-client-ca")
	f := newFrontServer(t, map[string]string{
		"client-ca-file":                     string(frontCA.CertPEM),
		"requestheader-client-ca-file":       string(proxyCA.CertPEM),
		"requestheader-allowed-names":        `["front-proxy-client"]`,
		"requestheader-username-headers":     `["X-Remote-User"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
	})
	kc := f.kubeconfig(t)
	o, logs := newTestOptions(t, "--storage-backend=memory", "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc)
	c, err := o.Complete()
	if err != nil {
		t.Fatal(err)
	}
	cfg := newConfig(t, c)
	a := cfg.Authenticator

	resp, ok, err := a.AuthenticateRequest(bearerRequest("front-token-0123"))
	if !ok || err != nil || resp.User.Name != "grace" {
		t.Errorf("a token of the front server: %v %v %+v", ok, err, resp)
	}
	if len(f.audiences) != 1 || f.audiences[0] != nil {
		t.Errorf("the TokenReview named audiences %q; the front server's own apply", f.audiences)
	}
	r := withPeer(httptest.NewRequest("GET", "/apis", nil), leafOf(t, proxyCA, "front-proxy-client"))
	r.Header.Set("X-Remote-User", "heidi")
	r.Header.Set("X-Remote-Group", "ops")
	if resp, ok, err := a.AuthenticateRequest(r); !ok || err != nil || resp.User.Name != "heidi" || resp.User.Groups[0] != "ops" {
		t.Errorf("the front proxy of the ConfigMap: %v %v %+v", ok, err, resp)
	}
	for name, ca := range map[string]*certs.CA{"the front server's client CA": frontCA, "the development PKI": o.SecureServing.CA} {
		if resp, ok, err := a.AuthenticateRequest(withPeer(httptest.NewRequest("GET", "/apis", nil), leafOf(t, ca, "ivan"))); !ok || err != nil || resp.User.Name != "ivan" {
			t.Errorf("a client certificate of %s: %v %v", name, ok, err)
		}
	}
	forged := httptest.NewRequest("GET", "/apis", nil)
	forged.Header.Set("X-Remote-User", "admin")
	forged.Header.Set("Authorization", "Bearer front-token-0123")
	if resp, ok, _ := a.AuthenticateRequest(forged); !ok || resp.User.Name != "grace" || forged.Header.Get("X-Remote-User") != "" {
		t.Errorf("forged headers with a token: %+v (headers left: %v)", resp, forged.Header)
	}

	grace := &authn.User{Name: "grace", Groups: []string{"devs", authn.AllAuthenticated}}
	attrs := authz.Attributes{User: grace, Verb: "list", ResourceRequest: true, APIGroup: "wardle.example.com", Resource: "flunders", Namespace: "default"}
	if d, reason, err := cfg.Authorizer.Authorize(context.Background(), attrs); d != authz.DecisionAllow || reason != "the front server says so" || err != nil {
		t.Errorf("list flunders as grace: %v %q %v", d, reason, err)
	}
	attrs.Verb = "delete"
	if d, _, _ := cfg.Authorizer.Authorize(context.Background(), attrs); d == authz.DecisionAllow {
		t.Error("delete flunders as grace was allowed")
	}
	if d, _, _ := cfg.Authorizer.Authorize(context.Background(), authz.Attributes{User: grace, Verb: "get", Path: "/healthz"}); d != authz.DecisionAllow {
		t.Error("an always-allowed path was not")
	}
	if n := len(f.reviewsUser); n != 2 {
		t.Errorf("%d SubjectAccessReviews, want 2 (the health path is not asked about)", n)
	}
	if !strings.Contains(logs.String(), "delegated to "+f.srv.URL) {
		t.Errorf("the log does not say authentication is delegated:\n%s", logs)
	}
}

// TestDelegatedLookup: a front server without the ConfigMap (or without
// its keys) never stops the server; one that refuses or does not answer
// does, unless --authentication-tolerate-lookup-failure.
func TestDelegatedLookup(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		data    map[string]string
		extra   []string
		wantErr string
		wantLog string
		gets    int
	}{
		{name: "not found", status: 404, wantLog: "Cluster doesn't provide configmap/extension-apiserver-authentication in kube-system", gets: 1},
		{name: "no keys", status: 200, data: map[string]string{}, wantLog: "Cluster doesn't provide client-ca-file in configmap/extension-apiserver-authentication in kube-system, so client certificate authentication won't work.", gets: 1},
		{name: "forbidden", status: 403, wantErr: "unable to get configmap/extension-apiserver-authentication in kube-system: delegation: reading kube-system/extension-apiserver-authentication: 403 Forbidden: forbidden: bind the Role kube-system/extension-apiserver-authentication-reader", gets: 1},
		{name: "forbidden, tolerated", status: 403, extra: []string{"--authentication-tolerate-lookup-failure"}, wantLog: "continuing (--authentication-tolerate-lookup-failure)", gets: 1},
		{name: "failing", status: 500, wantErr: "unable to load configmap based request-header-client-ca-file", gets: 1},
		{name: "skipped", status: 500, extra: []string{"--authentication-skip-lookup"}, gets: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFrontServer(t, tc.data)
			f.cmStatus = tc.status
			o, logs := newTestOptions(t, append([]string{"--storage-backend=memory", "--authentication-kubeconfig=" + f.kubeconfig(t)}, tc.extra...)...)
			_, err := o.Complete()
			if o.SecureServing.Listener != nil {
				o.SecureServing.Listener.Close()
			}
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			}
			if tc.wantLog != "" && !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("the log lacks %q:\n%s", tc.wantLog, logs)
			}
			if f.cmGets != tc.gets {
				t.Errorf("%d reads of the ConfigMap, want %d", f.cmGets, tc.gets)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		f := newFrontServer(t, nil)
		kc := f.kubeconfig(t)
		f.srv.Close()
		o, _ := newTestOptions(t, "--storage-backend=memory", "--authentication-kubeconfig="+kc)
		if _, err := o.Complete(); err == nil || !strings.Contains(err.Error(), "unable to load configmap based request-header-client-ca-file") {
			t.Errorf("an unreachable front server: %v", err)
		}
	})
	t.Run("flags", func(t *testing.T) {
		o, _ := newTestOptions(t, "--authentication-skip-lookup", "--authentication-kubeconfig=/no/such/file", "--authorization-kubeconfig=/no/such/either")
		got := joinLines(errorStrings(func() error { _, err := o.Complete(); return err }()))
		for _, want := range []string{"--authentication-kubeconfig: reading kubeconfig: open /no/such/file", "--authorization-kubeconfig: reading kubeconfig: open /no/such/either"} {
			if !strings.Contains(got, want) {
				t.Errorf("errors lack %q:\n%s", want, got)
			}
		}
		o, _ = newTestOptions(t, "--authentication-tolerate-lookup-failure")
		if got := joinLines(errorStrings(func() error { _, err := o.Complete(); return err }())); !strings.Contains(got, "need --authentication-kubeconfig") {
			t.Errorf("--authentication-tolerate-lookup-failure alone: %s", got)
		}
	})
}

func TestTLSSAN(t *testing.T) {
	o, _ := newTestOptions(t, "--storage-backend=memory", "--tls-san=wardle.wardle.svc,10.1.2.3", "--tls-san=*.example.com")
	if _, err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(o.SecureServing.Certificate.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"wardle.wardle.svc", "10.1.2.3", "a.example.com", "localhost"} {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("the serving certificate does not cover %s: %v", h, err)
		}
	}
	// A restart with another name reissues the certificate.
	o2, _ := newTestOptions(t, "--storage-backend=memory", "--tls-san=other.ns.svc", "--data-dir="+o.Etcd.DataDir)
	if _, err := o2.Complete(); err != nil {
		t.Fatal(err)
	}
	leaf, _ = x509.ParseCertificate(o2.SecureServing.Certificate.Certificate[0])
	if leaf.VerifyHostname("other.ns.svc") != nil {
		t.Error("the certificate was not reissued for the new name")
	}
	dir := t.TempDir()
	o3, _ := newTestOptions(t, "--tls-san=not_a_name!", "--tls-san=x.svc", "--tls-cert-file="+filepath.Join(dir, "c"), "--tls-private-key-file="+filepath.Join(dir, "k"))
	got := joinLines(errorStrings(func() error { _, err := o3.Complete(); return err }()))
	for _, want := range []string{`--tls-san "not_a_name!" is neither an IP address nor a DNS name`, "--tls-san names hosts of the generated certificate; it cannot change --tls-cert-file"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
}

// newAggregatorOptions is newTestOptions with the aggregator's flags.
func newAggregatorOptions(t *testing.T, args ...string) *ServerRunOptions {
	t.Helper()
	o := NewServerRunOptions()
	o.Aggregator = NewAggregatorOptions()
	o.Etcd.DataDir = t.TempDir()
	o.Logger = slog.New(slog.DiscardHandler)
	fss := o.Flags()
	if _, ok := fss.FlagSets[SectionAggregator]; !ok {
		t.Fatal("no aggregator section")
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	for _, n := range fss.Order {
		fs.AddFlagSet(fss.FlagSets[n])
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return o
}

func TestAggregatorOptions(t *testing.T) {
	o := newAggregatorOptions(t, "--storage-backend=memory", "--secure-port=0", "--service-endpoint=wardle/api=127.0.0.1:8444")
	if _, err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	defer o.SecureServing.Listener.Close()
	pki := filepath.Join(o.Etcd.DataDir, "pki")
	for _, f := range []string{certs.FrontProxyCACertFile, certs.FrontProxyCAKeyFile, certs.FrontProxyClientCertFile, certs.FrontProxyClientKeyFile} {
		if _, err := os.Stat(filepath.Join(pki, f)); err != nil {
			t.Errorf("the development front-proxy PKI: %v", err)
		}
	}
	cfg := o.Aggregator.Config()
	cert, err := cfg.ProxyClientCertificate(&tls.CertificateRequestInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: mustPool(t, mustRead(t, filepath.Join(pki, certs.FrontProxyCACertFile))),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil || leaf.Subject.CommonName != certs.FrontProxyClientName {
		t.Errorf("the front-proxy client certificate: %s %v", leaf.Subject.CommonName, err)
	}
	if u, err := cfg.ServiceResolver.ResolveEndpoint("wardle", "api", 443); err != nil || u.String() != "https://127.0.0.1:8444" {
		t.Errorf("wardle/api: %v %v", u, err)
	}
	if u, err := cfg.ServiceResolver.ResolveEndpoint("default", "kubernetes", 443); err != nil || u.String() != o.SecureServing.localURL() {
		t.Errorf("default/kubernetes: %v %v, want the aggregator itself", u, err)
	}

	// A cluster's Services, behind the --service-endpoint table.
	cluster := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/namespaces/metrics/services/server":
			io.WriteString(w, `{"spec":{"clusterIP":"10.0.0.3","ports":[{"name":"https","port":443,"targetPort":4443}]}}`)
		case "/apis/discovery.k8s.io/v1/namespaces/metrics/endpointslices":
			io.WriteString(w, `{"items":[{"endpoints":[{"addresses":["127.0.0.1"]}],"ports":[{"name":"https","port":4443}]}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	cluster.Config.ErrorLog = log.New(io.Discard, "", 0)
	cluster.StartTLS()
	defer cluster.Close()
	clusterKubeconfig := filepath.Join(t.TempDir(), "cluster.kubeconfig")
	if err := (certs.Kubeconfig{Server: cluster.URL, Token: "t",
		CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cluster.Certificate().Raw})}).WriteFile(clusterKubeconfig); err != nil {
		t.Fatal(err)
	}
	for routing, want := range map[bool]string{false: "https://10.0.0.3:443", true: "https://127.0.0.1:4443"} {
		args := []string{"--storage-backend=memory", "--service-endpoint=wardle/api=127.0.0.1:8444", "--services-kubeconfig=" + clusterKubeconfig}
		if routing {
			args = append(args, "--enable-aggregator-routing")
		}
		oc := newAggregatorOptions(t, args...)
		if _, err := oc.Complete(); err != nil {
			t.Fatal(err)
		}
		r := oc.Aggregator.Config().ServiceResolver
		if u, err := r.ResolveEndpoint("metrics", "server", 443); err != nil || u.String() != want {
			t.Errorf("routing %v: %v %v, want %s", routing, u, err, want)
		}
		if u, err := r.ResolveEndpoint("wardle", "api", 443); err != nil || u.String() != "https://127.0.0.1:8444" {
			t.Errorf("routing %v, the static table first: %v %v", routing, u, err)
		}
	}

	bad := newAggregatorOptions(t, "--proxy-client-cert-file=x.crt", "--service-endpoint=wardle/api", "--service-endpoint=a/b=h:0",
		"--enable-aggregator-routing")
	got := joinLines(errorStrings(func() error { _, err := bad.Complete(); return err }()))
	for _, want := range []string{"--proxy-client-cert-file and --proxy-client-key-file must be given together",
		`--service-endpoint: service endpoint "wardle/api": want NAMESPACE/NAME=HOST:PORT`,
		"--enable-aggregator-routing needs --services-kubeconfig"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
}

func newTestCA(t *testing.T, name string) *certs.CA {
	t.Helper()
	ca, err := certs.NewCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// TestProxyClientCertificateReload rotates --proxy-client-cert-file and
// --proxy-client-key-file: the aggregator presents the new certificate to
// backends within seconds, without a restart.
func TestProxyClientCertificateReload(t *testing.T) {
	ca, err := certs.NewCA("front-proxy-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "proxy.crt"), filepath.Join(dir, "proxy.key")
	install := func(user string) {
		p, err := ca.IssueClient(user, nil, time.Hour)
		if err == nil {
			err = p.WriteFiles(certPath, keyPath)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	install("front-proxy-one")
	o := newAggregatorOptions(t, "--storage-backend=memory", "--secure-port=0",
		"--proxy-client-cert-file="+certPath, "--proxy-client-key-file="+keyPath)
	if _, err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	defer o.SecureServing.Listener.Close()
	get := o.Aggregator.Config().ProxyClientCertificate
	presented := func() string {
		c, err := get(&tls.CertificateRequestInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.Subject.CommonName
	}
	if got := presented(); got != "front-proxy-one" {
		t.Fatalf("presents %s", got)
	}
	install("front-proxy-two")
	deadline := time.Now().Add(10 * time.Second)
	for presented() != "front-proxy-two" {
		if time.Now().After(deadline) {
			t.Fatal("the rotated proxy client certificate is not presented after 10 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
