package filters_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authn/oidc"
	"github.com/apikit-dev/apikit/authn/review"
	"github.com/apikit-dev/apikit/authn/serviceaccount"
	"github.com/apikit-dev/apikit/authn/webhook"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/internal/testlog"
	"github.com/apikit-dev/apikit/server/filters"
)

// authnCase is one way of authenticating a request, for the benchmarks
// and the no-credentials-in-logs test.
type authnCase struct {
	name string
	a    authn.Authenticator
	// request returns a fresh request carrying valid credentials; secret
	// is the credential, which must never be logged.
	request func() *http.Request
	secret  string
	// invalid returns a request with a wrong credential.
	invalid func() *http.Request
}

func bearer(token string) func() *http.Request {
	return func() *http.Request {
		r := httptest.NewRequest("GET", "/apis/wardle.example.com/v1beta1/flunders", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}
}

func pemOf(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// authnCases builds every authenticator kube-apiserver has, each with a
// valid and an invalid credential.
func authnCases(tb testing.TB) []authnCase {
	tb.Helper()
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	ca, err := certs.NewCA("client-ca", time.Hour)
	must(err)
	pair, err := ca.IssueClient("alice", []string{"dev"}, time.Hour)
	must(err)
	tlsCert, err := pair.TLSCertificate()
	must(err)
	leaf, err := x509.ParseCertificate(tlsCert.Certificate[0])
	must(err)
	otherCA, err := certs.NewCA("other", time.Hour)
	must(err)
	otherPair, err := otherCA.IssueClient("mallory", nil, time.Hour)
	must(err)
	otherTLS, err := otherPair.TLSCertificate()
	must(err)
	otherLeaf, err := x509.ParseCertificate(otherTLS.Certificate[0])
	must(err)
	withCert := func(c *x509.Certificate) func() *http.Request {
		return func() *http.Request {
			r := httptest.NewRequest("GET", "/apis/wardle.example.com/v1beta1/flunders", nil)
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
			return r
		}
	}
	clientCAs := authn.StaticCAs{Pool: mustPoolTB(tb, ca.CertPEM)}

	// Static tokens: a hundred lines, as a modest token file.
	var tokens []authn.StaticToken
	for i := range 100 {
		tokens = append(tokens, authn.NewStaticToken(fmt.Sprintf("static-token-%03d-0123456789abcdef", i), authn.User{Name: fmt.Sprintf("user-%d", i)}))
	}
	static := authn.NewStaticTokens(tokens)

	// Service-account keys and a user token.
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	gen, err := serviceaccount.NewGenerator("https://sa.example.com", saKey)
	must(err)
	claims, userClaims := serviceaccount.NewUserClaims("alice", "u-1", []string{"dev"}, []string{"api"}, time.Hour, time.Now())
	saToken, err := gen.GenerateUserToken(claims, userClaims)
	must(err)
	sa, err := serviceaccount.NewAuthenticator([]string{"https://sa.example.com"}, []crypto.PublicKey{saKey.Public()}, []string{"api"})
	must(err)
	saForged := saToken[:len(saToken)-4] + "AAAA"

	// An OIDC issuer on loopback.
	oidcKey, err := rsa.GenerateKey(rand.Reader, 2048)
	must(err)
	var issuerURL string
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": issuerURL, "jwks_uri": issuerURL + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: oidcKey.Public(), KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	issuer := httptest.NewUnstartedServer(mux)
	issuer.Config.ErrorLog = log.New(io.Discard, "", 0)
	issuer.StartTLS()
	tb.Cleanup(issuer.Close)
	issuerURL = issuer.URL
	oa, err := oidc.New(oidc.Issuer{URL: issuerURL, CAPEM: pemOf(issuer.Certificate()), Audiences: []string{"kubernetes"}, GroupsClaim: "groups"})
	must(err)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: oidcKey}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	must(err)
	oidcToken, err := jwt.Signed(signer).Claims(map[string]any{"iss": issuerURL, "aud": "kubernetes", "sub": "alice",
		"groups": []string{"dev"}, "exp": time.Now().Add(time.Hour).Unix()}).Serialize()
	must(err)

	// A parent server answering TokenReviews.
	parent := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var tr review.TokenReview
		json.NewDecoder(r.Body).Decode(&tr)
		if tr.Spec.Token == "webhook-token-0123456789" {
			tr.Status = review.TokenReviewStatus{Authenticated: true, User: review.UserInfo{Username: "alice"}}
		}
		tr.Spec.Token = ""
		json.NewEncoder(w).Encode(&tr)
	}))
	parent.Config.ErrorLog = log.New(io.Discard, "", 0)
	parent.StartTLS()
	tb.Cleanup(parent.Close)
	wh, err := webhook.New(webhook.Config{Kubeconfig: certs.Kubeconfig{Server: parent.URL, CAPEM: pemOf(parent.Certificate())}})
	must(err)

	// The front proxy.
	proxyCA, err := certs.NewCA("front-proxy-ca", time.Hour)
	must(err)
	proxyPair, err := proxyCA.IssueClient("front-proxy-client", nil, time.Hour)
	must(err)
	proxyTLS, err := proxyPair.TLSCertificate()
	must(err)
	proxyLeaf, err := x509.ParseCertificate(proxyTLS.Certificate[0])
	must(err)
	rh, err := authn.NewRequestHeader(authn.RequestHeaderConfig{CAs: authn.StaticCAs{Pool: mustPoolTB(tb, proxyCA.CertPEM)},
		AllowedNames: []string{"front-proxy-client"}, UsernameHeaders: []string{"X-Remote-User"}, GroupHeaders: []string{"X-Remote-Group"}})
	must(err)
	proxied := func(c *x509.Certificate) func() *http.Request {
		return func() *http.Request {
			r := withCert(c)()
			r.Header.Set("X-Remote-User", "alice")
			r.Header.Set("X-Remote-Group", "dev")
			return r
		}
	}

	cached := func(t authn.TokenAuthenticator) authn.Authenticator {
		return authn.NewBearerToken(authn.NewTokenCache(t, authn.TokenCacheOptions{SuccessTTL: 10 * time.Second}))
	}
	all := authn.Union(rh, authn.NewX509(clientCAs), authn.NewBearerToken(authn.NewTokenCache(
		authn.UnionToken(static, sa, authn.AudienceAgnostic(authn.Audiences{"api"}, oa), wh), authn.TokenCacheOptions{SuccessTTL: 10 * time.Second})))

	return []authnCase{
		{name: "x509", a: authn.NewX509(clientCAs), request: withCert(leaf), invalid: withCert(otherLeaf)},
		{name: "token-file", a: authn.NewBearerToken(static), request: bearer("static-token-050-0123456789abcdef"), secret: "static-token-050-0123456789abcdef",
			invalid: bearer("static-token-xxx-0123456789abcdef")},
		{name: "token-file-cached", a: cached(static), request: bearer("static-token-050-0123456789abcdef"), secret: "static-token-050-0123456789abcdef",
			invalid: bearer("static-token-yyy-0123456789abcdef")},
		{name: "serviceaccount-jwt", a: authn.NewBearerToken(sa), request: bearer(saToken), secret: saToken, invalid: bearer(saForged)},
		{name: "serviceaccount-jwt-cached", a: cached(sa), request: bearer(saToken), secret: saToken, invalid: bearer(saForged)},
		{name: "oidc-jwt", a: authn.NewBearerToken(oa), request: bearer(oidcToken), secret: oidcToken, invalid: bearer(oidcToken[:len(oidcToken)-4] + "AAAA")},
		{name: "oidc-jwt-cached", a: cached(oa), request: bearer(oidcToken), secret: oidcToken, invalid: bearer(oidcToken[:len(oidcToken)-4] + "BBBB")},
		{name: "webhook", a: authn.NewBearerToken(wh), request: bearer("webhook-token-0123456789"), secret: "webhook-token-0123456789", invalid: bearer("webhook-token-wrong-0123")},
		{name: "webhook-cached", a: cached(wh), request: bearer("webhook-token-0123456789"), secret: "webhook-token-0123456789", invalid: bearer("webhook-token-bad-01234")},
		{name: "requestheader", a: rh, request: proxied(proxyLeaf), invalid: proxied(otherLeaf)},
		{name: "anonymous", a: authn.WithAnonymous(authn.Union(), nil), request: bearer("")},
		{name: "union-token", a: all, request: bearer(saToken), secret: saToken, invalid: bearer("no-such-token-0123456789")},
		{name: "union-x509", a: all, request: withCert(leaf), invalid: withCert(otherLeaf)},
	}
}

func mustPoolTB(tb testing.TB, pemBytes []byte) *x509.CertPool {
	tb.Helper()
	p, err := certs.PoolFromPEM(pemBytes)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkAuthentication measures the authentication filter with each
// authenticator: its cost per request and allocations, with and without
// the token cache in front of the token authenticators.
func BenchmarkAuthentication(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, found := authn.UserFrom(r.Context()); !found {
			b.Fatal("no user")
		}
	})
	for _, tc := range authnCases(b) {
		b.Run(tc.name, func(b *testing.B) {
			h := filters.WithAuthentication(ok, tc.a, nil)
			template := tc.request()
			auth := template.Header.Get("Authorization")
			remote, group := template.Header.Get("X-Remote-User"), template.Header.Get("X-Remote-Group")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, tc.request()) // warm caches and key sets
			if w.Code != 200 {
				b.Fatalf("warm-up: %d %s", w.Code, w.Body)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				// The filter removes the credentials it used: put them back.
				if auth != "" {
					template.Header["Authorization"] = []string{auth}
				}
				if remote != "" {
					template.Header["X-Remote-User"] = []string{remote}
					template.Header["X-Remote-Group"] = []string{group}
				}
				h.ServeHTTP(w, template)
			}
		})
	}
}

// TestCredentialsNeverLogged runs every authenticator through the
// authentication filter with valid and invalid credentials, logging at
// debug: the 401 never reaches the handler, and no credential appears in
// the log or in a response.
func TestCredentialsNeverLogged(t *testing.T) {
	logs := testlog.Capture(t)
	for _, tc := range authnCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			h := filters.WithAuthentication(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				called = true
				if r.Header.Get("Authorization") != "" {
					t.Error("the credential reached the handler")
				}
			}), tc.a, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, tc.request())
			if rec.Code != 200 || !called {
				t.Fatalf("valid credentials: %d %s", rec.Code, rec.Body)
			}
			if tc.invalid == nil {
				return
			}
			called = false
			r := tc.invalid()
			secret := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != 401 || called {
				t.Errorf("invalid credentials: %d, handler called %v", rec.Code, called)
			}
			for _, s := range []string{secret, tc.secret} {
				if len(s) < 8 {
					continue
				}
				if strings.Contains(logs.String(), s) || strings.Contains(rec.Body.String(), s) {
					t.Errorf("a credential was logged or answered:\n%s\n%s", logs, rec.Body)
				}
			}
		})
	}
	if !strings.Contains(logs.String(), "authentication failed") {
		t.Errorf("failures were not logged at all:\n%s", logs)
	}
}
