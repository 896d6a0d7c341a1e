package serviceaccount

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/apikit-dev/apikit/authn"
)

const issuer = "https://issuer.example.com"

type testKeys struct {
	rsa, ec, other crypto.Signer
}

func newTestKeys(t testing.TB) testKeys {
	t.Helper()
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	o, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return testKeys{rsa: r, ec: e, other: o}
}

func generator(t testing.TB, iss string, key crypto.Signer) *Generator {
	t.Helper()
	g, err := NewGenerator(iss, key)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestAuthenticator(t *testing.T) {
	keys := newTestKeys(t)
	now := time.Now()
	a, err := NewAuthenticator([]string{issuer, "https://old-issuer.example.com"}, []crypto.PublicKey{keys.rsa.Public(), keys.ec.Public()}, []string{"api"})
	if err != nil {
		t.Fatal(err)
	}
	a.Now = func() time.Time { return now }
	rsaGen, ecGen := generator(t, issuer, keys.rsa), generator(t, issuer, keys.ec)
	user := func(g *Generator, mod func(c *jwt.Claims)) string {
		c, u := NewUserClaims("alice", "u-1", []string{"dev"}, []string{"api"}, time.Hour, now)
		if mod != nil {
			mod(c)
		}
		tok, err := g.GenerateUserToken(c, u)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	sa := func(g *Generator, mod func(c *jwt.Claims, p *PrivateClaims)) string {
		c, p := NewClaims("ns", Ref{Name: "robot", UID: "sa-uid"}, []string{"api"}, time.Hour, now)
		p.Kubernetes.Pod = &Ref{Name: "pod-1", UID: "pod-uid"}
		if mod != nil {
			mod(c, p)
		}
		tok, err := g.GenerateToken(c, p)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	validSA := sa(ecGen, nil)
	parts := strings.Split(validSA, ".")

	for _, tc := range []struct {
		name      string
		token     string
		ctx       context.Context
		wantUser  string
		wantErr   string // "" and no user: not this authenticator's business
		wantAuds  []string
		wantExtra map[string][]string
	}{
		{name: "user token, RSA", token: user(rsaGen, nil), wantUser: "alice", wantAuds: []string{"api"}},
		{name: "user token, ECDSA", token: user(ecGen, nil), wantUser: "alice"},
		{name: "service account token", token: validSA, wantUser: "system:serviceaccount:ns:robot",
			wantExtra: map[string][]string{"authentication.kubernetes.io/pod-name": {"pod-1"}, "authentication.kubernetes.io/pod-uid": {"pod-uid"}}},
		{name: "second issuer", token: user(generator(t, "https://old-issuer.example.com", keys.ec), nil), wantUser: "alice"},
		{name: "expired", token: user(ecGen, func(c *jwt.Claims) {
			c.Expiry = jwt.NewNumericDate(now.Add(-2 * time.Minute))
		}), wantErr: "token is expired"},
		{name: "expired within the clock skew", token: user(ecGen, func(c *jwt.Claims) {
			c.Expiry = jwt.NewNumericDate(now.Add(-30 * time.Second))
		}), wantUser: "alice"},
		{name: "not valid yet", token: user(ecGen, func(c *jwt.Claims) {
			c.NotBefore = jwt.NewNumericDate(now.Add(5 * time.Minute))
		}), wantErr: "not valid yet"},
		{name: "issued in the future", token: user(ecGen, func(c *jwt.Claims) {
			c.IssuedAt = jwt.NewNumericDate(now.Add(5 * time.Minute))
		}), wantErr: "issued in the future"},
		{name: "no expiry", token: user(ecGen, func(c *jwt.Claims) { c.Expiry = nil }), wantErr: "has no expiry"},
		{name: "wrong issuer is another authenticator's business", token: user(generator(t, "https://elsewhere", keys.ec), nil)},
		{name: "wrong audience", token: user(ecGen, func(c *jwt.Claims) { c.Audience = jwt.Audience{"other-service"} }),
			wantErr: `token audiences ["other-service"] is invalid for the target audiences ["api"]`},
		{name: "audiences asked for in the context", token: user(ecGen, func(c *jwt.Claims) { c.Audience = jwt.Audience{"api", "vault"} }),
			ctx: authn.WithAudiences(context.Background(), authn.Audiences{"vault"}), wantUser: "alice", wantAuds: []string{"vault"}},
		{name: "wrong audience for the context", token: user(ecGen, nil),
			ctx: authn.WithAudiences(context.Background(), authn.Audiences{"vault"}), wantErr: "is invalid for the target audiences"},
		{name: "signed by an unknown key", token: user(generator(t, issuer, keys.other), nil), wantErr: "signature is invalid"},
		{name: "tampered payload", token: parts[0] + "." + tamper(t, parts[1]) + "." + parts[2], wantErr: "signature is invalid"},
		{name: "signature of another token", token: strings.Join(strings.Split(user(ecGen, nil), ".")[:2], ".") + "." + parts[2], wantErr: "signature is invalid"},
		{name: "alg none is not a token we verify", token: unsigned(t, parts[1])},
		{name: "HMAC with the public key as secret is not either", token: hmacSigned(t, parts[1], keys.ec)},
		{name: "not a JWT", token: "static-token"},
		{name: "garbage in three parts", token: "a.b.c"},
		{name: "service account subject mismatch", token: sa(ecGen, func(c *jwt.Claims, _ *PrivateClaims) { c.Subject = "system:serviceaccount:kube-system:admin" }),
			wantErr: "subject does not match"},
		{name: "user token posing as a service account", token: user(ecGen, func(c *jwt.Claims) { c.Subject = "system:serviceaccount:ns:robot" }),
			wantErr: "invalid subject"},
		{name: "neither user nor service account claims", token: func() string {
			c, _ := NewUserClaims("alice", "", nil, []string{"api"}, time.Hour, now)
			tok, err := ecGen.GenerateToken(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}(), wantErr: "neither service account nor user claims"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			resp, ok, err := a.AuthenticateToken(ctx, tc.token)
			switch {
			case tc.wantErr != "":
				if ok || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got ok=%v err=%v, want error %q", ok, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), tc.token) {
					t.Error("the error holds the token")
				}
			case tc.wantUser == "":
				if ok || err != nil {
					t.Fatalf("got %+v ok=%v err=%v, want not ours", resp, ok, err)
				}
			default:
				if !ok || err != nil || resp.User.Name != tc.wantUser {
					t.Fatalf("got %+v ok=%v err=%v, want %s", resp, ok, err, tc.wantUser)
				}
				if tc.wantAuds != nil && !slices.Equal(resp.Audiences, tc.wantAuds) {
					t.Errorf("audiences %v, want %v", resp.Audiences, tc.wantAuds)
				}
				for k, v := range tc.wantExtra {
					if !slices.Equal(resp.User.Extra[k], v) {
						t.Errorf("extra %s = %v, want %v", k, resp.User.Extra[k], v)
					}
				}
				if id := resp.User.Extra[authn.CredentialIDKey]; len(id) != 1 || !strings.HasPrefix(id[0], "JTI=") {
					t.Errorf("credential ID %v", id)
				}
			}
		})
	}

	t.Run("user and service account attributes", func(t *testing.T) {
		resp, _, _ := a.AuthenticateToken(context.Background(), user(ecGen, nil))
		if u := resp.User; u.UID != "u-1" || !slices.Equal(u.Groups, []string{"dev"}) {
			t.Errorf("user %+v", u)
		}
		resp, _, _ = a.AuthenticateToken(context.Background(), validSA)
		if u := resp.User; u.UID != "sa-uid" || !slices.Equal(u.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:ns"}) {
			t.Errorf("service account %+v", u)
		}
	})

	t.Run("no implicit audiences: tokens for anything", func(t *testing.T) {
		open, err := NewAuthenticator([]string{issuer}, []crypto.PublicKey{keys.ec.Public()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := open.AuthenticateToken(context.Background(), user(ecGen, func(c *jwt.Claims) { c.Audience = jwt.Audience{"x"} })); !ok || err != nil {
			t.Errorf("%v %v", ok, err)
		}
	})

	for _, bad := range []func() (*Authenticator, error){
		func() (*Authenticator, error) {
			return NewAuthenticator(nil, []crypto.PublicKey{keys.ec.Public()}, nil)
		},
		func() (*Authenticator, error) { return NewAuthenticator([]string{issuer}, nil, nil) },
	} {
		if _, err := bad(); err == nil {
			t.Error("an authenticator without issuers or keys")
		}
	}
}

// tamper changes the subject in a base64url payload.
func tamper(t *testing.T, payload string) string {
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(b), "robot", "admin", 1)))
}

// unsigned builds an alg=none token around payload.
func unsigned(t *testing.T, payload string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + payload + "."
}

// hmacSigned signs payload with HS256 keyed by the public key's bytes:
// the classic confusion attack.
func hmacSigned(t *testing.T, payload string, key crypto.Signer) string {
	kid, _ := KeyID(key.Public())
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"` + kid + `"}`))
	mac := hmac.New(sha256.New, []byte(kid))
	mac.Write([]byte(header + "." + payload))
	return header + "." + payload + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func TestLoadOrCreateSigningKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pki", SigningKeyFile)
	k1, err := LoadOrCreateSigningKey(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}
	k2, err := LoadOrCreateSigningKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.Public().(*ecdsa.PublicKey).Equal(k2.Public()) {
		t.Error("a restart made a new key: every token minted before is void")
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateSigningKey(path); err == nil {
		t.Error("a corrupt key was replaced silently")
	}
}

// FuzzAuthenticateToken throws arbitrary strings, and mutations of a valid
// token, at the verifier: it must not panic, must never authenticate
// anything but the exact token it was given, and must never put the token
// in an error.
func FuzzAuthenticateToken(f *testing.F) {
	keys := newTestKeys(f)
	now := time.Unix(1_800_000_000, 0)
	g := generator(f, issuer, keys.ec)
	c, u := NewUserClaims("alice", "u-1", []string{"dev"}, []string{"api"}, time.Hour, now)
	valid, err := g.GenerateUserToken(c, u)
	if err != nil {
		f.Fatal(err)
	}
	a, err := NewAuthenticator([]string{issuer}, []crypto.PublicKey{keys.ec.Public()}, []string{"api"})
	if err != nil {
		f.Fatal(err)
	}
	a.Now = func() time.Time { return now }
	parts := strings.Split(valid, ".")
	f.Add(valid)
	f.Add(parts[0] + "." + parts[1] + ".")
	f.Add(parts[0] + ".." + parts[2])
	f.Add(unsigned(nil, parts[1]))
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJFUzI1NiJ9.e30.")
	f.Add(strings.Repeat(".", 3))
	f.Fuzz(func(t *testing.T, token string) {
		resp, ok, err := a.AuthenticateToken(context.Background(), token)
		if ok {
			// Only the valid token may pass, up to base64's unused
			// trailing bits (which decode to the same bytes); anything
			// else authenticating is a forgery.
			if !sameDecoded(token, valid) {
				t.Fatalf("%q authenticated as %+v", token, resp.User)
			}
			return
		}
		if err != nil && len(token) > 16 && strings.Contains(err.Error(), token) {
			t.Fatalf("the error holds the token: %v", err)
		}
	})
}

// sameDecoded reports whether two compact JWS decode to the same bytes.
func sameDecoded(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	if len(pa) != 3 || len(pb) != 3 {
		return false
	}
	for i := range pa {
		da, err1 := base64.RawURLEncoding.DecodeString(pa[i])
		db, err2 := base64.RawURLEncoding.DecodeString(pb[i])
		if err1 != nil || err2 != nil || string(da) != string(db) {
			return false
		}
	}
	return true
}
