package oidc

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/apikit-dev/apikit/certs"
)

// testIssuer is an OpenID provider served by the test on loopback over
// TLS: a discovery document and a JWKS whose keys the test rotates.
type testIssuer struct {
	srv             *httptest.Server
	mu              sync.Mutex
	keys            map[string]crypto.Signer // by kid, published
	extraJWKS       []jose.JSONWebKey        // published as they are
	discoveryIssuer string                   // "" means the right one
	jwksFetches     atomic.Int64
}

func newTestIssuer(t testing.TB) *testIssuer {
	t.Helper()
	ti := &testIssuer{keys: map[string]crypto.Signer{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		ti.mu.Lock()
		iss := ti.discoveryIssuer
		ti.mu.Unlock()
		if iss == "" {
			iss = ti.srv.URL
		}
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": ti.srv.URL + "/openid/v1/jwks"})
	})
	mux.HandleFunc("/openid/v1/jwks", func(w http.ResponseWriter, r *http.Request) {
		ti.jwksFetches.Add(1)
		ti.mu.Lock()
		defer ti.mu.Unlock()
		set := jose.JSONWebKeySet{Keys: slices.Clone(ti.extraJWKS)}
		for kid, k := range ti.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Public(), KeyID: kid, Use: "sig", Algorithm: alg(k)})
		}
		json.NewEncoder(w).Encode(set)
	})
	ti.srv = httptest.NewUnstartedServer(mux)
	ti.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point of some tests
	ti.srv.StartTLS()
	t.Cleanup(ti.srv.Close)
	return ti
}

func alg(k crypto.Signer) string {
	if _, ok := k.(*rsa.PrivateKey); ok {
		return string(jose.RS256)
	}
	return string(jose.ES256)
}

func (ti *testIssuer) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ti.srv.Certificate().Raw})
}

// addKey publishes a new key and returns it.
func (ti *testIssuer) addKey(t testing.TB, kid string, rsaKey bool) crypto.Signer {
	t.Helper()
	var k crypto.Signer
	var err error
	if rsaKey {
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	ti.mu.Lock()
	ti.keys[kid] = k
	ti.mu.Unlock()
	return k
}

func (ti *testIssuer) removeKey(kid string) {
	ti.mu.Lock()
	delete(ti.keys, kid)
	ti.mu.Unlock()
}

// sign makes a token with claims, signed by key as kid.
func sign(t testing.TB, key crypto.Signer, kid string, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(alg(key)), Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestAuthenticator(t *testing.T) {
	ti := newTestIssuer(t)
	rsaKey := ti.addKey(t, "rsa-1", true)
	ecKey := ti.addKey(t, "ec-1", false)
	stranger, _ := rsa.GenerateKey(rand.Reader, 2048)
	now := time.Now()
	a, err := New(Issuer{
		URL: ti.srv.URL, CAPEM: ti.caPEM(), Audiences: []string{"kubernetes", "other-client"},
		SigningAlgorithms: []string{"RS256", "ES256"},
		UsernameClaim:     "sub", UsernamePrefix: ti.srv.URL + "#",
		GroupsClaim: "groups", GroupsPrefix: "oidc:",
		UIDClaim:       "uid",
		RequiredClaims: map[string]string{"hd": "example.com"},
		Now:            func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	claims := func(mod func(c map[string]any)) map[string]any {
		c := map[string]any{
			"iss": ti.srv.URL, "aud": []string{"kubernetes"}, "sub": "alice", "uid": "u-1",
			"groups": []string{"dev", "qa"}, "hd": "example.com", "jti": "id-1",
			"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "nbf": now.Unix(),
		}
		if mod != nil {
			mod(c)
		}
		return c
	}

	for _, tc := range []struct {
		name       string
		token      string
		wantUser   string
		wantGroups []string
		wantErr    string // "" and no user: not ours
	}{
		{name: "RSA", token: sign(t, rsaKey, "rsa-1", claims(nil)), wantUser: ti.srv.URL + "#alice", wantGroups: []string{"oidc:dev", "oidc:qa"}},
		{name: "ECDSA", token: sign(t, ecKey, "ec-1", claims(nil)), wantUser: ti.srv.URL + "#alice"},
		{name: "a second audience", token: sign(t, rsaKey, "rsa-1", claims(func(c map[string]any) { c["aud"] = "other-client" })), wantUser: ti.srv.URL + "#alice"},
		{name: "groups as one string", token: sign(t, rsaKey, "rsa-1", claims(func(c map[string]any) { c["groups"] = "ops" })),
			wantUser: ti.srv.URL + "#alice", wantGroups: []string{"oidc:ops"}},
		{name: "no groups", token: sign(t, rsaKey, "rsa-1", claims(func(c map[string]any) { delete(c, "groups") })), wantUser: ti.srv.URL + "#alice"},
		{name: "expired", token: sign(t, rsaKey, "rsa-1", claims(func(c map[string]any) { c["exp"] = now.Add(-2 * time.Minute).Unix() })), wantErr: "token is expired"},
		{name: "not yet valid", token: sign(t, rsaKey, "rsa-1", claims(func(c map[string]any) { c["nbf"] = now.Add(5 * time.Minute).Unix() })), wantErr: "not valid yet"},
		{name: "no expiry", token: sign(t, rsaKey, "rsa-1", claims(func(c map[string]any) { delete(c, "exp") })), wantErr: "has no expiry"},
		{name: "wrong issuer is not ours", token: sign(t, rsaKey, "rsa-1", claims(func(c map[string]any) { c["iss"] = "https://accounts.example.com" }))},
		{name: "wrong audience", token: sign(t, rsaKey, "rsa-1", claims(func(c map[string]any) { c["aud"] = "someone-else" })), wantErr: "invalid audience"},
		{name: "bad signature: a stranger's key under a known kid", token: sign(t, stranger, "rsa-1", claims(nil)), wantErr: "invalid signature"},
		{name: "algorithm not allowed is not ours", token: func() string {
			k, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
			s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES384, Key: k}, nil)
			tok, _ := jwt.Signed(s).Claims(claims(nil)).Serialize()
			return tok
		}()},
		{name: "required claim missing", token: sign(t, rsaKey, "rsa-1", claims(func(c map[string]any) { delete(c, "hd") })), wantErr: "required claim hd"},
		{name: "required claim different", token: sign(t, rsaKey, "rsa-1", claims(func(c map[string]any) { c["hd"] = "evil.com" })), wantErr: "required claim hd"},
		{name: "no username", token: sign(t, rsaKey, "rsa-1", claims(func(c map[string]any) { delete(c, "sub") })), wantErr: "claim sub is missing or empty"},
		{name: "UID not a string", token: sign(t, rsaKey, "rsa-1", claims(func(c map[string]any) { c["uid"] = 42 })), wantErr: "claim uid is not a string"},
		{name: "groups of the wrong type", token: sign(t, rsaKey, "rsa-1", claims(func(c map[string]any) { c["groups"] = []any{"a", 1} })), wantErr: "not an array of strings"},
		{name: "a static token is not ours", token: "abcdef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, ok, err := a.AuthenticateToken(context.Background(), tc.token)
			switch {
			case tc.wantErr != "":
				if ok || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got ok=%v err=%v, want %q", ok, err, tc.wantErr)
				}
			case tc.wantUser == "":
				if ok || err != nil {
					t.Fatalf("got %+v ok=%v err=%v, want not ours", resp, ok, err)
				}
			default:
				if !ok || err != nil || resp.User.Name != tc.wantUser || resp.User.UID != "u-1" {
					t.Fatalf("got %+v ok=%v err=%v, want %s", resp, ok, err, tc.wantUser)
				}
				if tc.wantGroups != nil && !slices.Equal(resp.User.Groups, tc.wantGroups) {
					t.Errorf("groups %v, want %v", resp.User.Groups, tc.wantGroups)
				}
			}
		})
	}
	if n := ti.jwksFetches.Load(); n > 3 {
		t.Errorf("%d key set fetches for a handful of tokens, want a cached set", n)
	}
}

// TestKeyRotation rotates the issuer's keys: a token signed by a new key
// is accepted at once (the unknown key ID makes the authenticator fetch
// the set again), a retired key stops verifying once the set is fetched
// again, and a flood of unknown key IDs costs at most one fetch per
// MinRefetchInterval.
func TestKeyRotation(t *testing.T) {
	ti := newTestIssuer(t)
	old := ti.addKey(t, "old", true)
	now := time.Now()
	clock := func() time.Time { return now }
	a, err := New(Issuer{URL: ti.srv.URL, CAPEM: ti.caPEM(), Audiences: []string{"k"}, UsernamePrefix: "-",
		MinRefetchInterval: 10 * time.Second, MaxKeyAge: time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	tok := func(key crypto.Signer, kid string) string {
		return sign(t, key, kid, map[string]any{"iss": ti.srv.URL, "aud": "k", "sub": "alice", "exp": now.Add(time.Hour).Unix()})
	}
	authenticate := func(token string) error {
		_, ok, err := a.AuthenticateToken(context.Background(), token)
		if err == nil && !ok {
			return fmt.Errorf("not authenticated")
		}
		return err
	}
	if err := authenticate(tok(old, "old")); err != nil {
		t.Fatal(err)
	}
	if n := ti.jwksFetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}

	// A new key appears: the first token with its kid fetches again, even
	// within the refetch interval if the last fetch is old enough.
	now = now.Add(11 * time.Second)
	fresh := ti.addKey(t, "new", true)
	if err := authenticate(tok(fresh, "new")); err != nil {
		t.Fatalf("a token of the new key: %v", err)
	}
	if n := ti.jwksFetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}

	// A flood of made-up key IDs right after: no fetch at all.
	for i := range 50 {
		if err := authenticate(tok(fresh, fmt.Sprintf("forged-%d", i))); err == nil || !strings.Contains(err.Error(), "no key of issuer") {
			t.Fatalf("forged kid: %v", err)
		}
	}
	if n := ti.jwksFetches.Load(); n != 2 {
		t.Fatalf("%d fetches after a flood of unknown key IDs, want still 2", n)
	}
	// After the interval, one more fetch for the next unknown one.
	now = now.Add(11 * time.Second)
	for i := range 50 {
		authenticate(tok(fresh, fmt.Sprintf("forged-again-%d", i)))
	}
	if n := ti.jwksFetches.Load(); n != 3 {
		t.Fatalf("%d fetches, want 3", n)
	}

	// The old key is retired: once the cached set is older than MaxKeyAge
	// it is fetched again, and the old key no longer verifies.
	ti.removeKey("old")
	if err := authenticate(tok(old, "old")); err != nil {
		t.Fatalf("within MaxKeyAge the cached old key still works: %v", err)
	}
	now = now.Add(2 * time.Hour)
	if err := authenticate(tok(old, "old")); err == nil {
		t.Fatal("a retired key still verifies after the key set was refreshed")
	}
	if err := authenticate(tok(fresh, "new")); err != nil {
		t.Fatalf("the current key: %v", err)
	}
}

func TestIssuerFailures(t *testing.T) {
	ti := newTestIssuer(t)
	key := ti.addKey(t, "k", true)
	now := time.Now()
	token := sign(t, key, "k", map[string]any{"iss": ti.srv.URL, "aud": "k", "sub": "alice", "exp": now.Add(time.Hour).Unix()})
	try := func(iss Issuer) error {
		iss.URL, iss.Audiences = ti.srv.URL, []string{"k"}
		a, err := New(iss)
		if err != nil {
			return err
		}
		_, _, err = a.AuthenticateToken(context.Background(), token)
		return err
	}
	// httptest's servers share one certificate: another CA is needed.
	other, err := certs.NewCA("other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := try(Issuer{CAPEM: other.CertPEM}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an issuer whose certificate the CA does not sign: %v", err)
	}
	if err := try(Issuer{}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an issuer not in the system roots: %v", err)
	}
	ti.mu.Lock()
	ti.discoveryIssuer = "https://impostor.example.com"
	ti.mu.Unlock()
	if err := try(Issuer{CAPEM: ti.caPEM()}); err == nil || !strings.Contains(err.Error(), `names issuer "https://impostor.example.com"`) {
		t.Errorf("a discovery document of another issuer: %v", err)
	}
	ti.mu.Lock()
	ti.discoveryIssuer = ""
	ti.extraJWKS = []jose.JSONWebKey{{Key: []byte("a shared secret"), KeyID: "k", Algorithm: "HS256"}}
	ti.keys = map[string]crypto.Signer{}
	ti.mu.Unlock()
	if err := try(Issuer{CAPEM: ti.caPEM()}); err == nil || !strings.Contains(err.Error(), "no public signing keys") {
		t.Errorf("a key set of a symmetric key only: %v", err)
	}

	for _, bad := range []Issuer{
		{URL: "http://insecure.example.com", Audiences: []string{"k"}},
		{URL: "https://example.com?x=1", Audiences: []string{"k"}},
		{URL: "https://example.com"},
		{URL: "https://example.com", Audiences: []string{"k"}, SigningAlgorithms: []string{"HS256"}},
		{URL: "https://example.com", Audiences: []string{"k"}, CAPEM: []byte("garbage")},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		}
	}
}

func TestEmailVerified(t *testing.T) {
	ti := newTestIssuer(t)
	key := ti.addKey(t, "k", true)
	now := time.Now()
	a, err := New(Issuer{URL: ti.srv.URL, CAPEM: ti.caPEM(), Audiences: []string{"k"}, UsernameClaim: "email"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		verified any
		ok       bool
	}{{nil, true}, {true, true}, {false, false}, {"true", false}} {
		c := map[string]any{"iss": ti.srv.URL, "aud": "k", "email": "alice@example.com", "exp": now.Add(time.Hour).Unix()}
		if tc.verified != nil {
			c["email_verified"] = tc.verified
		}
		resp, ok, err := a.AuthenticateToken(context.Background(), sign(t, key, "k", c))
		if ok != tc.ok || (ok && resp.User.Name != "alice@example.com") {
			t.Errorf("email_verified=%v: %+v %v %v", tc.verified, resp, ok, err)
		}
	}
}

func TestParseConfig(t *testing.T) {
	good := `
apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: https://issuer.example.com
    audiences: [kubernetes, other]
    audienceMatchPolicy: MatchAny
    certificateAuthority: |
      -----BEGIN CERTIFICATE-----
  claimValidationRules:
  - claim: hd
    requiredValue: example.com
  claimMappings:
    username:
      claim: email
      prefix: ""
    groups:
      claim: groups
      prefix: "oidc:"
    uid:
      claim: sub
anonymous:
  enabled: true
  conditions:
  - path: /livez
`
	c, err := ParseConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	iss := c.JWT[0].Config()
	if iss.URL != "https://issuer.example.com" || !slices.Equal(iss.Audiences, []string{"kubernetes", "other"}) ||
		iss.UsernameClaim != "email" || iss.UsernamePrefix != "" || iss.GroupsClaim != "groups" || iss.GroupsPrefix != "oidc:" ||
		iss.UIDClaim != "sub" || iss.RequiredClaims["hd"] != "example.com" || !strings.Contains(string(iss.CAPEM), "BEGIN CERTIFICATE") {
		t.Errorf("issuer %+v", iss)
	}
	if a := c.Anonymous; a == nil || !a.Enabled || len(a.Conditions) != 1 || a.Conditions[0].Path != "/livez" {
		t.Errorf("anonymous %+v", c.Anonymous)
	}

	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"wrong kind", "apiVersion: v1\nkind: Config\n", []string{`want kind AuthenticationConfiguration`}},
		{"unknown field", "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\nbogus: 1\n", []string{`unknown field "bogus"`}},
		{"everything wrong with an issuer", `
apiVersion: apiserver.config.k8s.io/v1beta1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: http://issuer.example.com
    audiences: [a, b]
  claimMappings:
    username:
      claim: sub
    groups:
      expression: claims.groups
- issuer:
    url: https://x.example.com
    audiences: [a]
  claimValidationRules:
  - expression: claims.hd == "x"
  claimMappings:
    username:
      expression: claims.sub
- issuer:
    url: https://x.example.com
    audiences: [a]
  claimMappings:
    username:
      claim: sub
      prefix: ""
`, []string{
			`jwt[0].issuer.url: Invalid value: "http://issuer.example.com": must be an https URL`,
			`jwt[0].issuer.audienceMatchPolicy: Invalid value: "": audienceMatchPolicy must be MatchAny for multiple audiences`,
			`jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set`,
			`jwt[0].claimMappings.groups.expression: CEL expressions are not supported by apikit`,
			`jwt[1].claimValidationRules[0].expression: CEL expressions are not supported by apikit`,
			`jwt[1].claimMappings.username.expression: CEL expressions are not supported by apikit`,
			`jwt[2].issuer.url: Duplicate value: "https://x.example.com"`,
		}},
		{"anonymous conditions without enabled", "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\nanonymous:\n  enabled: false\n  conditions:\n  - path: /healthz\n",
			[]string{"enabled should be set to true when conditions are defined"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.yaml))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// FuzzAuthenticateToken: a bearer token is client input. Whatever it
// holds, the authenticator answers without a panic, and a token it accepts
// names the user the issuer signed for: the fuzzer cannot forge one.
//
//	go test ./authn/oidc -run - -fuzz FuzzAuthenticateToken -fuzztime 30s
func FuzzAuthenticateToken(f *testing.F) {
	ti := newTestIssuer(f)
	key := ti.addKey(f, "rsa-1", true)
	now := time.Now()
	a, err := New(Issuer{
		URL: ti.srv.URL, CAPEM: ti.caPEM(), Audiences: []string{"kubernetes"},
		UsernameClaim: "sub", UsernamePrefix: "oidc:", GroupsClaim: "groups",
		Now: func() time.Time { return now },
	})
	if err != nil {
		f.Fatal(err)
	}
	valid := sign(f, key, "rsa-1", map[string]any{
		"iss": ti.srv.URL, "aud": "kubernetes", "sub": "alice", "groups": []string{"dev"},
		"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(),
	})
	f.Add(valid)
	f.Add(valid + "x")
	f.Add(strings.Replace(valid, ".", "..", 1))
	f.Add(sign(f, key, "unknown-kid", map[string]any{"iss": ti.srv.URL, "sub": "bob"}))
	f.Add("e30.e30.")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		resp, ok, err := a.AuthenticateToken(context.Background(), token)
		if ok && (err != nil || resp == nil || resp.User.Name != "oidc:alice") {
			t.Fatalf("AuthenticateToken(%q) = %+v, %v, %v: accepted as someone the issuer did not sign for", token, resp, ok, err)
		}
	})
}
