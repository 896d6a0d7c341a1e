package options

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/authn/review"
	"github.com/apikit-dev/apikit/certs"
)

// loopbackIssuer serves an OpenID discovery document and a JWKS over TLS
// and signs tokens with its one key.
type loopbackIssuer struct {
	srv *httptest.Server
	key *ecdsa.PrivateKey
}

func newLoopbackIssuer(t *testing.T) *loopbackIssuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	li := &loopbackIssuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": li.srv.URL, "jwks_uri": li.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "k", Algorithm: "ES256", Use: "sig"}}})
	})
	li.srv = httptest.NewUnstartedServer(mux)
	li.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	li.srv.StartTLS()
	t.Cleanup(li.srv.Close)
	return li
}

func (li *loopbackIssuer) caFile(t *testing.T) string {
	return writeFile(t, t.TempDir(), "oidc-ca.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: li.srv.Certificate().Raw})))
}

func (li *loopbackIssuer) token(t *testing.T, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: li.key}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]any{"iss": li.srv.URL, "aud": "kubernetes", "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		base[k] = v
	}
	tok, err := jwt.Signed(s).Claims(base).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func bearerRequest(token string) *http.Request {
	r := httptest.NewRequest("GET", "/apis", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

// TestAuthenticationFromFlags configures every authenticator with
// kube-apiserver's flags and checks that the server's authenticator
// honours each.
func TestAuthenticationFromFlags(t *testing.T) {
	dir := t.TempDir()
	tokens := writeFile(t, dir, "tokens.csv", "static-secret,alice,u-1,\"dev,qa\"\n")
	proxyCA, err := certs.NewCA("front-proxy-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	proxyCAFile := writeFile(t, dir, "front-proxy-ca.crt", string(proxyCA.CertPEM))
	issuer := newLoopbackIssuer(t)
	parent := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var tr review.TokenReview
		json.NewDecoder(r.Body).Decode(&tr)
		if tr.Spec.Token == "parent-secret" {
			tr.Status = review.TokenReviewStatus{Authenticated: true, User: review.UserInfo{Username: "from-parent"}}
		}
		json.NewEncoder(w).Encode(&tr)
	}))
	parent.Config.ErrorLog = log.New(io.Discard, "", 0)
	parent.StartTLS()
	defer parent.Close()
	kubeconfig := filepath.Join(dir, "webhook.kubeconfig")
	if err := (certs.Kubeconfig{Server: parent.URL + "/apis/authentication.k8s.io/v1/tokenreviews",
		CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: parent.Certificate().Raw}), Token: "x"}).WriteFile(kubeconfig); err != nil {
		t.Fatal(err)
	}

	o, _ := newTestOptions(t, "--storage-backend=memory", "--token-auth-file="+tokens,
		"--requestheader-client-ca-file="+proxyCAFile, "--requestheader-allowed-names=front-proxy-client",
		"--oidc-issuer-url="+issuer.srv.URL, "--oidc-client-id=kubernetes", "--oidc-ca-file="+issuer.caFile(t),
		"--oidc-username-claim=email", "--oidc-groups-claim=groups", "--oidc-groups-prefix=oidc:", "--oidc-signing-algs=ES256",
		"--authentication-token-webhook-config-file="+kubeconfig, "--authorization-mode=RBAC", "--anonymous-auth")
	c, err := o.Complete()
	if err != nil {
		t.Fatal(err)
	}
	cfg := newConfig(t, c)
	if cfg.Authenticator == nil || o.Authentication.TokenAuthenticator == nil {
		t.Fatal("the authenticator was not applied")
	}
	// The development PKI made the signing key; tokens it signs work.
	userToken, err := o.MintUserToken(TokenRequest{User: "carol", Groups: []string{"ops"}, TTL: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	admin, err := tls.X509KeyPair(mustRead(t, filepath.Join(o.Etcd.DataDir, "pki", certs.AdminCertFile)), mustRead(t, filepath.Join(o.Etcd.DataDir, "pki", certs.AdminKeyFile)))
	if err != nil {
		t.Fatal(err)
	}
	adminLeaf, _ := x509.ParseCertificate(admin.Certificate[0])
	proxyPair, _ := proxyCA.IssueClient("front-proxy-client", nil, time.Hour)
	proxyTLS, _ := proxyPair.TLSCertificate()
	proxyLeaf, _ := x509.ParseCertificate(proxyTLS.Certificate[0])

	for _, tc := range []struct {
		name   string
		r      *http.Request
		user   string
		groups []string
	}{
		{name: "client certificate", r: withPeer(httptest.NewRequest("GET", "/apis", nil), adminLeaf), user: "admin", groups: []string{"system:masters"}},
		{name: "static token", r: bearerRequest("static-secret"), user: "alice", groups: []string{"dev", "qa"}},
		{name: "user token", r: bearerRequest(userToken), user: "carol", groups: []string{"ops"}},
		{name: "OIDC", r: bearerRequest(issuer.token(t, map[string]any{"email": "dave@example.com", "groups": []string{"sre"}})), user: "dave@example.com", groups: []string{"oidc:sre"}},
		{name: "webhook", r: bearerRequest("parent-secret"), user: "from-parent"},
		{name: "front proxy", r: func() *http.Request {
			r := withPeer(httptest.NewRequest("GET", "/apis", nil), proxyLeaf)
			r.Header.Set("X-Remote-User", "eve")
			r.Header.Set("X-Remote-Group", "proxied")
			return r
		}(), user: "eve", groups: []string{"proxied"}},
		{name: "anonymous", r: httptest.NewRequest("GET", "/apis", nil), user: "system:anonymous", groups: []string{"system:unauthenticated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, ok, err := cfg.Authenticator.AuthenticateRequest(tc.r)
			if !ok || err != nil || resp.User.Name != tc.user || !slices.Equal(resp.User.Groups, tc.groups) {
				t.Errorf("got %+v %v %v, want %s %v", resp, ok, err, tc.user, tc.groups)
			}
		})
	}
	t.Run("an invalid token is refused, not anonymous", func(t *testing.T) {
		if _, ok, err := cfg.Authenticator.AuthenticateRequest(bearerRequest("no-such-token")); ok || err == nil {
			t.Errorf("%v %v", ok, err)
		}
	})
	t.Run("spoofed front-proxy headers", func(t *testing.T) {
		r := bearerRequest("static-secret")
		r.Header.Set("X-Remote-User", "system:admin")
		r.Header.Set("X-Remote-Group", "system:masters")
		resp, ok, _ := cfg.Authenticator.AuthenticateRequest(r)
		if !ok || resp.User.Name != "alice" || r.Header.Get("X-Remote-User") != "" || r.Header.Get("X-Remote-Group") != "" {
			t.Errorf("got %+v, headers %v", resp, r.Header)
		}
	})
	if got := o.Authentication.APIAudiences; !slices.Equal(got, []string{DevServiceAccountIssuer}) {
		t.Errorf("API audiences %v, want the issuer", got)
	}
}

func withPeer(r *http.Request, c *x509.Certificate) *http.Request {
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
	return r
}

func TestAuthenticationRejects(t *testing.T) {
	dir := t.TempDir()
	badConfig := writeFile(t, dir, "authn.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: http://x\n")
	anonConfig := writeFile(t, dir, "anon.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\nanonymous:\n  enabled: true\n")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"oidc issuer without client", []string{"--oidc-issuer-url=https://issuer.example.com"}, []string{"oidc-issuer-url and oidc-client-id should be specified together"}},
		{"oidc and a configuration file", []string{"--oidc-issuer-url=https://issuer.example.com", "--oidc-client-id=k", "--authentication-config=" + badConfig},
			[]string{"authentication-config file and oidc-* flags are mutually exclusive"}},
		{"an http issuer", []string{"--oidc-issuer-url=http://issuer.example.com", "--oidc-client-id=k"}, []string{`oidc: issuer URL "http://issuer.example.com" must be an https URL`}},
		{"files missing", []string{"--token-auth-file=" + filepath.Join(dir, "none.csv"), "--requestheader-client-ca-file=" + filepath.Join(dir, "none.crt"),
			"--authentication-token-webhook-config-file=" + filepath.Join(dir, "none.kubeconfig"), "--authentication-config=" + filepath.Join(dir, "none.yaml"),
			"--audit-log-path=" + dir + "/"},
			[]string{"--token-auth-file: open " + filepath.Join(dir, "none.csv") + ": no such file or directory",
				"--requestheader-client-ca-file: open " + filepath.Join(dir, "none.crt") + ": no such file or directory",
				"--authentication-token-webhook-config-file: reading kubeconfig: open " + filepath.Join(dir, "none.kubeconfig"),
				"--authentication-config: open " + filepath.Join(dir, "none.yaml"),
			}},
		{"a broken token file", []string{"--token-auth-file=" + writeFile(t, dir, "bad.csv", "secret,alice\n")},
			[]string{"--token-auth-file " + filepath.Join(dir, "bad.csv") + ": token file must have at least 3 columns"}},
		{"a broken configuration file", []string{"--authentication-config=" + badConfig}, []string{`jwt[0].issuer.url: Invalid value: "http://x": must be an https URL`}},
		{"anonymous twice", []string{"--authentication-config=" + anonConfig, "--anonymous-auth"}, []string{"anonymous is configured in both"}},
		{"webhook version", []string{"--authentication-token-webhook-version=v2"}, []string{`--authentication-token-webhook-version "v2" is not supported`}},
		{"webhook cache", []string{"--authentication-token-webhook-cache-ttl=-1s"}, []string{"--authentication-token-webhook-cache-ttl can not be negative value"}},
		{"request headers without user headers", []string{"--requestheader-client-ca-file=x", "--requestheader-username-headers="},
			[]string{"--requestheader-username-headers must be set with --requestheader-client-ca-file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := newTestOptions(t, append([]string{"--storage-backend=memory"}, tc.args...)...)
			_, err := o.Complete()
			got := joinLines(errorStrings(err))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("errors lack %q:\n%s", w, got)
				}
			}
			if strings.Contains(got, "secret") {
				t.Errorf("an error shows a token:\n%s", got)
			}
		})
	}
}

func TestStructuredAnonymous(t *testing.T) {
	config := writeFile(t, t.TempDir(), "authn.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
anonymous:
  enabled: true
  conditions:
  - path: /livez
  - path: /readyz
`)
	o, _ := newTestOptions(t, "--storage-backend=memory", "--authentication-config="+config, "--authorization-mode=RBAC")
	c, err := o.Complete()
	if err != nil {
		t.Fatal(err)
	}
	a := newConfig(t, c).Authenticator
	if _, ok, _ := a.AuthenticateRequest(httptest.NewRequest("GET", "/livez", nil)); !ok {
		t.Error("anonymous refused on /livez")
	}
	if _, ok, _ := a.AuthenticateRequest(httptest.NewRequest("GET", "/apis", nil)); ok {
		t.Error("anonymous allowed on /apis")
	}

	o, logs := newTestOptions(t, "--storage-backend=memory", "--authentication-config="+config, "--authorization-mode=AlwaysAllow")
	c, err = o.Complete()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := newConfig(t, c).Authenticator.AuthenticateRequest(httptest.NewRequest("GET", "/livez", nil)); ok || !strings.Contains(logs.String(), "AnonymousAuth is not allowed with the AlwaysAllow authorizer") {
		t.Error("structured anonymous access kept under AlwaysAllow")
	}
}

// TestDevSigningKey: the development PKI makes a signing key on first
// start and reuses it on every later one, so that minted tokens survive a
// restart; real certificates or keys make none.
func TestDevSigningKey(t *testing.T) {
	o, _ := newTestOptions(t, "--storage-backend=memory")
	if _, err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(o.Etcd.DataDir, "pki", "sa.key")
	if o.ServiceAccount.SigningKeyFile != keyFile || o.ServiceAccount.Generator == nil || !slices.Equal(o.ServiceAccount.Issuers, []string{DevServiceAccountIssuer}) {
		t.Fatalf("signing key %q, issuers %v", o.ServiceAccount.SigningKeyFile, o.ServiceAccount.Issuers)
	}
	token, err := o.MintUserToken(TokenRequest{User: "alice", TTL: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	// A restart: new options on the same data directory.
	restarted, _ := newTestOptions(t, "--storage-backend=memory")
	restarted.Etcd.DataDir = o.Etcd.DataDir
	rc, err := restarted.Complete()
	if err != nil {
		t.Fatal(err)
	}
	if resp, ok, err := newConfig(t, rc).Authenticator.AuthenticateRequest(bearerRequest(token)); !ok || err != nil || resp.User.Name != "alice" {
		t.Errorf("a token minted before the restart: %+v %v %v", resp, ok, err)
	}

	t.Run("an issuer of one's own", func(t *testing.T) {
		o, _ := newTestOptions(t, "--storage-backend=memory", "--service-account-issuer=https://wardle.example.com")
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		if o.ServiceAccount.Generator == nil || o.ServiceAccount.Generator.Issuer() != "https://wardle.example.com" {
			t.Error("the dev key does not sign as the given issuer")
		}
	})
	t.Run("verification keys only", func(t *testing.T) {
		_, pub := writeECKey(t, t.TempDir())
		o, _ := newTestOptions(t, "--storage-backend=memory", "--service-account-key-file="+pub, "--service-account-issuer=https://x")
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(o.Etcd.DataDir, "pki", "sa.key")); !os.IsNotExist(err) || o.ServiceAccount.Generator != nil {
			t.Errorf("a signing key was made although keys were given: %v", err)
		}
	})
	t.Run("no development PKI", func(t *testing.T) {
		o, _ := newTestOptions(t, "--storage-backend=memory", "--dev-pki=false")
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		if o.ServiceAccount.SigningKey != nil {
			t.Error("a signing key without the development PKI")
		}
	})
}

func TestTokenCommand(t *testing.T) {
	dataDir := t.TempDir()
	run := func(args ...string) (string, error) {
		cmd := NewServerCommand("example", NewServerRunOptions(), nil)
		var out, errOut bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append([]string{"token", "--data-dir=" + dataDir}, args...))
		err := cmd.Execute()
		return out.String(), err
	}
	if _, err := run("--user=alice"); err == nil || !strings.Contains(err.Error(), "start the server once") {
		t.Errorf("before the server made its key: %v", err)
	}
	o, _ := newTestOptions(t, "--storage-backend=memory")
	o.Etcd.DataDir = dataDir
	c, err := o.Complete()
	if err != nil {
		t.Fatal(err)
	}
	a := newConfig(t, c).Authenticator
	out, err := run("--user=alice", "--group=dev", "--group=qa", "--uid=u-1", "--ttl=10m")
	if err != nil {
		t.Fatal(err)
	}
	resp, ok, err := a.AuthenticateRequest(bearerRequest(strings.TrimSpace(out)))
	if !ok || err != nil || resp.User.Name != "alice" || resp.User.UID != "u-1" || !slices.Equal(resp.User.Groups, []string{"dev", "qa"}) {
		t.Fatalf("minted token: %+v %v %v", resp, ok, err)
	}
	var claims jwt.Claims
	parsed, _ := jwt.ParseSigned(strings.TrimSpace(out), []jose.SignatureAlgorithm{jose.ES256})
	parsed.UnsafeClaimsWithoutVerification(&claims)
	if ttl := claims.Expiry.Time().Sub(claims.IssuedAt.Time()); ttl != 10*time.Minute {
		t.Errorf("ttl %v", ttl)
	}
	for _, bad := range [][]string{{}, {"--user=system:serviceaccount:ns:x"}, {"--user=a", "--ttl=0s"}, {"--user=a", "--service-account-signing-key-file=" + filepath.Join(dataDir, "pki", "sa.key")}} {
		if _, err := run(bad...); err == nil {
			t.Errorf("token %v succeeded", bad)
		}
	}
	// Another audience: a token the server does not accept.
	out, err = run("--user=alice", "--audience=vault")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := a.AuthenticateRequest(bearerRequest(strings.TrimSpace(out))); ok {
		t.Error("a token for another audience was accepted")
	}
	if err := os.WriteFile(filepath.Join(dataDir, "help"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := NewServerCommand("example", NewServerRunOptions(), nil)
	var help bytes.Buffer
	cmd.SetOut(&help)
	cmd.SetArgs([]string{"token", "--help"})
	if err := cmd.Execute(); err != nil || !strings.Contains(help.String(), "--user string") || strings.Contains(help.String(), "--etcd-servers") {
		t.Errorf("token --help: %v\n%s", err, help.String())
	}
}

func TestAuditLogOption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "audit.log")
	o, _ := newTestOptions(t, "--storage-backend=memory", "--audit-log-path="+path)
	c, err := o.Complete()
	if err != nil {
		t.Fatal(err)
	}
	cfg := newConfig(t, c)
	if cfg.Audit == nil {
		t.Fatal("no audit sink")
	}
	cfg.Audit.Log(&audit.Event{AuditID: "x"})
	if data := mustRead(t, path); !strings.Contains(string(data), `"auditID":"x"`) {
		t.Errorf("log %s", data)
	}
	o.Audit.Sink.Close()

	o, _ = newTestOptions(t, "--storage-backend=memory")
	c, _ = o.Complete()
	if newConfig(t, c).Audit != nil {
		t.Error("auditing on by default")
	}
}

// TestAuditPolicyOption runs a server with --audit-policy-file: requests
// are logged at the levels the policy gives, bodies included at
// RequestResponse, nothing at None.
func TestAuditPolicyOption(t *testing.T) {
	dir := t.TempDir()
	logPath, policyPath := filepath.Join(dir, "audit.log"), filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyPath, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/readyz", "/healthz*", "/livez*"]
- level: RequestResponse
  resources: [{group: test.example.com, resources: [widgets]}]
- level: Metadata
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCommand(t, "--storage-backend=memory", "--audit-log-path="+logPath, "--audit-policy-file="+policyPath)
	if code, body := r.do("POST", "/apis/test.example.com/v1/widgets", `{"metadata":{"name":"w"}}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, body := r.do("GET", "/apis", ""); code != 200 {
		t.Fatalf("discovery: %d %s", code, body)
	}
	var create, discovery *audit.Event
	deadline := time.Now().Add(5 * time.Second)
	for (create == nil || discovery == nil) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		data, _ := os.ReadFile(logPath)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev audit.Event
			if json.Unmarshal([]byte(line), &ev) != nil {
				continue
			}
			if strings.HasPrefix(ev.RequestURI, "/readyz") {
				t.Errorf("a request the policy gives None was logged: %s", line)
			}
			switch {
			case ev.Verb == "create" && ev.Stage == audit.StageResponseComplete:
				create = &ev
			case ev.RequestURI == "/apis":
				discovery = &ev
			}
		}
	}
	if create == nil || create.Level != audit.LevelRequestResponse || string(create.RequestObject) != `{"metadata":{"name":"w"}}` ||
		!strings.Contains(string(create.ResponseObject), `"name":"w"`) || !strings.Contains(string(create.ResponseObject), `"uid":`) {
		t.Errorf("the create's event: %+v", create)
	}
	if discovery == nil || discovery.Level != audit.LevelMetadata || discovery.RequestObject != nil || discovery.ResponseObject != nil {
		t.Errorf("the discovery request's event: %+v", discovery)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Loud}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, _ := newTestOptions(t, "--storage-backend=memory", "--audit-policy-file="+bad)
	if _, err := o.Complete(); err == nil || !strings.Contains(err.Error(), `--audit-policy-file: `+bad+`: rules[0].level: "Loud" is not one of`) {
		t.Errorf("a bad policy: %v", err)
	}
}
