package authn_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/certs"
)

// leaf issues a certificate from ca with tmpl's subject, validity and
// usages, and returns it parsed.
func leaf(t *testing.T, ca *certs.CA, tmpl *x509.Certificate) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore = time.Now().Add(-time.Hour)
	}
	if tmpl.NotAfter.IsZero() {
		tmpl.NotAfter = time.Now().Add(time.Hour)
	}
	if tmpl.KeyUsage == 0 {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// clientCert is a client-auth certificate for user in groups.
func clientCert(t *testing.T, ca *certs.CA, user string, groups ...string) *x509.Certificate {
	return leaf(t, ca, &x509.Certificate{Subject: pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

func newCA(t *testing.T, name string) *certs.CA {
	t.Helper()
	ca, err := certs.NewCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// tlsRequest is a request over TLS presenting chain (none when empty).
func tlsRequest(chain ...*x509.Certificate) *http.Request {
	r := httptest.NewRequest("GET", "/apis", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: chain}
	return r
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// replaceFile replaces path with data through a rename, as configuration
// management tools (and Kubernetes' projected volumes) do.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// randReader is crypto/rand's reader, by value, for x509.CreateCertificate.
type randReader struct{}

func (randReader) Read(p []byte) (int, error) { return rand.Read(p) }

func removeFile(path string) error { return os.Remove(path) }
