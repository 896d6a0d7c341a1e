package oidc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/apikit-dev/apikit/authn"
)

// Defaults of the key cache.
const (
	// DefaultMaxKeyAge is how long fetched keys are used before they are
	// fetched again.
	DefaultMaxKeyAge = time.Hour
	// DefaultMinRefetchInterval bounds how often an unknown key ID (or an
	// unreachable issuer) makes the authenticator fetch the keys again.
	DefaultMinRefetchInterval = 10 * time.Second
	// ClockSkew is how far exp, nbf and iat may be off.
	ClockSkew = jwt.DefaultLeeway
)

// Issuer configures the tokens of one issuer and how they map to users.
type Issuer struct {
	// URL is the issuer: tokens must carry it as "iss", and, unless
	// DiscoveryURL is set, its discovery document is at
	// URL/.well-known/openid-configuration. It must be https.
	URL string
	// DiscoveryURL, when set, is where the discovery document is read
	// instead; the document must still name URL as its issuer.
	DiscoveryURL string
	// CAPEM verifies the TLS certificates of the discovery and JWKS
	// endpoints; empty means the system's roots.
	CAPEM []byte
	// Audiences are the client IDs a token may be for: its "aud" must
	// contain at least one of them.
	Audiences []string
	// SigningAlgorithms are the JWS algorithms accepted; empty means RS256,
	// as --oidc-signing-algs defaults.
	SigningAlgorithms []string

	// UsernameClaim holds the user name ("sub" by default), and
	// UsernamePrefix is put before it. With the claim "email", a token
	// whose "email_verified" claim is present must have it true.
	UsernameClaim, UsernamePrefix string
	// GroupsClaim, when set, holds the groups (a string or an array of
	// strings), each prefixed with GroupsPrefix.
	GroupsClaim, GroupsPrefix string
	// UIDClaim, when set, holds the user's UID.
	UIDClaim string
	// RequiredClaims must each be present in the token with exactly the
	// given value.
	RequiredClaims map[string]string

	// MaxKeyAge and MinRefetchInterval tune the key cache; zero means
	// the defaults.
	MaxKeyAge, MinRefetchInterval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Transport, when set, is used to reach the issuer (tests); CAPEM is
	// then ignored.
	Transport http.RoundTripper
}

// Authenticator authenticates the JWTs of one issuer.
type Authenticator struct {
	iss    Issuer
	algs   []jose.SignatureAlgorithm
	keySet *remoteKeySet
	now    func() time.Time
}

// New checks iss and returns its authenticator. Nothing is fetched yet:
// the keys are fetched when the first token of the issuer arrives.
func New(iss Issuer) (*Authenticator, error) {
	u, err := url.Parse(iss.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("oidc: issuer URL %q must be an https URL", iss.URL)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("oidc: issuer URL %q must not have a user, query or fragment", iss.URL)
	}
	discoveryURL := iss.DiscoveryURL
	if discoveryURL == "" {
		discoveryURL = strings.TrimSuffix(iss.URL, "/") + "/.well-known/openid-configuration"
	} else if d, err := url.Parse(discoveryURL); err != nil || d.Scheme != "https" || d.Host == "" {
		return nil, fmt.Errorf("oidc: discovery URL %q must be an https URL", discoveryURL)
	}
	if len(iss.Audiences) == 0 {
		return nil, fmt.Errorf("oidc: issuer %s needs at least one audience (client ID)", iss.URL)
	}
	if iss.UsernameClaim == "" {
		iss.UsernameClaim = "sub"
	}
	if len(iss.SigningAlgorithms) == 0 {
		iss.SigningAlgorithms = []string{string(jose.RS256)}
	}
	var algs []jose.SignatureAlgorithm
	for _, a := range iss.SigningAlgorithms {
		switch alg := jose.SignatureAlgorithm(a); alg {
		case jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.PS384, jose.PS512, jose.EdDSA:
			algs = append(algs, alg)
		default:
			return nil, fmt.Errorf("oidc: signing algorithm %q is not supported", a)
		}
	}
	transport := iss.Transport
	if transport == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		if len(iss.CAPEM) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(iss.CAPEM) {
				return nil, fmt.Errorf("oidc: issuer %s: no PEM certificates in the CA bundle", iss.URL)
			}
			tr.TLSClientConfig.RootCAs = pool
		}
		transport = tr
	}
	now := iss.Now
	if now == nil {
		now = time.Now
	}
	ks := &remoteKeySet{
		issuer: iss.URL, discoveryURL: discoveryURL,
		client: &http.Client{Transport: transport, Timeout: 30 * time.Second,
			// A redirect could leave https; the issuer has no reason to.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		maxAge: iss.MaxKeyAge, minRefetch: iss.MinRefetchInterval, now: now,
	}
	if ks.maxAge <= 0 {
		ks.maxAge = DefaultMaxKeyAge
	}
	if ks.minRefetch <= 0 {
		ks.minRefetch = DefaultMinRefetchInterval
	}
	return &Authenticator{iss: iss, algs: algs, keySet: ks, now: now}, nil
}

// IssuerURL is the issuer the authenticator accepts tokens of.
func (a *Authenticator) IssuerURL() string { return a.iss.URL }

// AuthenticateToken implements authn.TokenAuthenticator. Tokens of other
// issuers, and strings that are not JWTs, are not its business.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authn.Response, bool, error) {
	if strings.Count(token, ".") != 2 {
		return nil, false, nil
	}
	parsed, err := jwt.ParseSigned(token, a.algs)
	if err != nil {
		return nil, false, nil
	}
	var unverified jwt.Claims
	if err := parsed.UnsafeClaimsWithoutVerification(&unverified); err != nil || unverified.Issuer != a.iss.URL {
		return nil, false, nil
	}
	h := parsed.Headers[0]
	keys, err := a.keySet.keysFor(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return nil, false, fmt.Errorf("oidc: verifying token of %s: %w", a.iss.URL, err)
	}
	var payload json.RawMessage
	verified := false
	for _, k := range keys {
		if err := parsed.Claims(k.Key, &payload); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, false, fmt.Errorf("oidc: token of %s: invalid signature", a.iss.URL)
	}
	var std jwt.Claims
	var claims map[string]any
	if err := json.Unmarshal(payload, &std); err != nil {
		return nil, false, fmt.Errorf("oidc: token of %s: %w", a.iss.URL, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(payload)))
	dec.UseNumber()
	if err := dec.Decode(&claims); err != nil {
		return nil, false, fmt.Errorf("oidc: token of %s: %w", a.iss.URL, err)
	}
	if std.Expiry == nil {
		return nil, false, fmt.Errorf("oidc: token of %s has no expiry", a.iss.URL)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: a.iss.URL, AnyAudience: a.iss.Audiences, Time: a.now()}, ClockSkew); err != nil {
		return nil, false, fmt.Errorf("oidc: token of %s: %w", a.iss.URL, err)
	}
	u, err := a.user(claims, std.ID)
	if err != nil {
		return nil, false, fmt.Errorf("oidc: token of %s: %w", a.iss.URL, err)
	}
	return &authn.Response{User: u}, true, nil
}

// user maps verified claims to the user.
func (a *Authenticator) user(claims map[string]any, jti string) (authn.User, error) {
	for name, want := range a.iss.RequiredClaims {
		got, ok := claims[name].(string)
		if !ok || got != want {
			return authn.User{}, fmt.Errorf("required claim %s not present or not %q", name, want)
		}
	}
	name, err := stringClaim(claims, a.iss.UsernameClaim)
	if err != nil {
		return authn.User{}, err
	}
	if name == "" {
		return authn.User{}, fmt.Errorf("claim %s is missing or empty", a.iss.UsernameClaim)
	}
	if a.iss.UsernameClaim == "email" {
		if v, present := claims["email_verified"]; present {
			if verified, ok := v.(bool); !ok || !verified {
				return authn.User{}, errors.New("email not verified")
			}
		}
	}
	u := authn.User{Name: a.iss.UsernamePrefix + name}
	if a.iss.GroupsClaim != "" {
		groups, err := stringsClaim(claims, a.iss.GroupsClaim)
		if err != nil {
			return authn.User{}, err
		}
		for _, g := range groups {
			u.Groups = append(u.Groups, a.iss.GroupsPrefix+g)
		}
	}
	if a.iss.UIDClaim != "" {
		if u.UID, err = stringClaim(claims, a.iss.UIDClaim); err != nil {
			return authn.User{}, err
		}
	}
	if jti != "" {
		u.Extra = map[string][]string{authn.CredentialIDKey: {"JTI=" + jti}}
	}
	return u, nil
}

// stringClaim returns a string claim; a missing one is "".
func stringClaim(claims map[string]any, name string) (string, error) {
	v, ok := claims[name]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("claim %s is not a string", name)
	}
	return s, nil
}

// stringsClaim returns a claim that is a string or an array of strings; a
// missing one is empty.
func stringsClaim(claims map[string]any, name string) ([]string, error) {
	switch v := claims[name].(type) {
	case nil:
		return nil, nil
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("claim %s is not an array of strings", name)
			}
			out = append(out, s)
		}
		return slices.Clip(out), nil
	}
	return nil, fmt.Errorf("claim %s is neither a string nor an array of strings", name)
}
