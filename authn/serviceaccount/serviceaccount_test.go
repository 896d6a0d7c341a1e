package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// mustDER returns a function that fails t on an encoding error.
func mustDER(t *testing.T) func([]byte, error) []byte {
	return func(der []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
}

func TestParseKeysPEM(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	must := mustDER(t)
	cert := must(x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sa"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sa"}}, ecKey.Public(), ecKey))

	private := []struct {
		name string
		pem  []byte
		want crypto.PublicKey
	}{
		{"RSA PKCS #1", pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), rsaKey.Public()},
		{"RSA PKCS #8", pemBlock("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(rsaKey))), rsaKey.Public()},
		{"EC SEC 1 after EC PARAMETERS", append(pemBlock("EC PARAMETERS", []byte{6, 8, 42, 134, 72, 206, 61, 3, 1, 7}),
			pemBlock("EC PRIVATE KEY", must(x509.MarshalECPrivateKey(ecKey)))...), ecKey.Public()},
		{"EC PKCS #8", pemBlock("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(ecKey))), ecKey.Public()},
	}
	for _, tc := range private {
		t.Run("private "+tc.name, func(t *testing.T) {
			key, err := ParsePrivateKeyPEM(tc.pem)
			if err != nil {
				t.Fatal(err)
			}
			if !key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(tc.want) {
				t.Error("wrong key")
			}
			// A private key file also serves as a verification key file.
			pubs, err := ParsePublicKeysPEM(tc.pem)
			if err != nil || len(pubs) != 1 {
				t.Fatalf("public keys of a private key file: %v %v", pubs, err)
			}
		})
	}

	public := pemBlock("PUBLIC KEY", must(x509.MarshalPKIXPublicKey(rsaKey.Public())))
	public = append(public, pemBlock("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&rsaKey.PublicKey))...)
	public = append(public, pemBlock("PUBLIC KEY", must(x509.MarshalPKIXPublicKey(ecKey.Public())))...)
	public = append(public, pemBlock("CERTIFICATE", cert)...)
	pubs, err := ParsePublicKeysPEM(public)
	if err != nil || len(pubs) != 4 {
		t.Fatalf("ParsePublicKeysPEM = %d keys, %v; want 4", len(pubs), err)
	}

	for _, bad := range [][]byte{[]byte("not PEM"), pemBlock("CERTIFICATE", cert)} {
		if _, err := ParsePrivateKeyPEM(bad); err == nil || !strings.Contains(err.Error(), "does not contain a valid RSA or ECDSA private key") {
			t.Errorf("ParsePrivateKeyPEM(%.20q) error = %v", bad, err)
		}
	}
	if _, err := ParsePublicKeysPEM([]byte("not PEM")); err == nil || !strings.Contains(err.Error(), "does not contain any valid RSA or ECDSA public keys") {
		t.Errorf("ParsePublicKeysPEM error = %v", err)
	}

	path := filepath.Join(t.TempDir(), "sa.key")
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := PrivateKeyFromFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("PrivateKeyFromFile error does not name the file: %v", err)
	}
	if _, err := PublicKeysFromFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("PublicKeysFromFile of a missing file succeeded")
	}
}

func TestGenerator(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]crypto.Signer{"RS256": rsaKey}
	for alg, curve := range map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()} {
		k, err := ecdsa.GenerateKey(curve, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys[alg] = k
	}
	now := time.Now()
	for alg, key := range keys {
		t.Run(alg, func(t *testing.T) {
			g, err := NewGenerator("https://issuer.example.com", key)
			if err != nil {
				t.Fatal(err)
			}
			claims, private := NewClaims("ns", Ref{Name: "robot", UID: "u-1"}, []string{"api"}, time.Hour, now)
			token, err := g.GenerateToken(claims, private)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
			if err != nil {
				t.Fatal(err)
			}
			if h := parsed.Headers[0]; h.KeyID != g.KeyID() || h.Algorithm != alg || h.ExtraHeaders["typ"] != "JWT" {
				t.Errorf("header %+v, want kid %s alg %s typ JWT", h, g.KeyID(), alg)
			}
			var got jwt.Claims
			var gotPrivate PrivateClaims
			if err := parsed.Claims(key.Public(), &got, &gotPrivate); err != nil {
				t.Fatalf("verifying with the public key: %v", err)
			}
			if err := got.ValidateWithLeeway(jwt.Expected{Issuer: "https://issuer.example.com", AnyAudience: jwt.Audience{"api"}, Time: now}, 0); err != nil {
				t.Error(err)
			}
			if got.Subject != "system:serviceaccount:ns:robot" || got.ID == "" {
				t.Errorf("claims %+v", got)
			}
			if k := gotPrivate.Kubernetes; k.Namespace != "ns" || k.ServiceAccount != (Ref{Name: "robot", UID: "u-1"}) || k.Pod != nil {
				t.Errorf("kubernetes.io claims %+v", k)
			}
		})
	}
	if _, err := NewGenerator("", rsaKey); err == nil {
		t.Error("a generator without an issuer")
	}
}

func TestKeyIDIsKubernetes(t *testing.T) {
	// kube-apiserver's key ID: unpadded base64url SHA-256 of the PKIX DER.
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := KeyID(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	if len(id) != 43 || strings.ContainsAny(id, "+/=") {
		t.Errorf("key ID %q is not unpadded base64url of 32 bytes", id)
	}
}
