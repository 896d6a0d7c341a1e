package certs_test

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/certs"
)

func TestBootstrap(t *testing.T) {
	dir := t.TempDir()
	b, err := certs.Bootstrap(dir, "0.0.0.0", 6443)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := x509.ParseCertificate(b.Serving.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots, err := certs.PoolFromPEM(b.CA.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1", "localhost", "::1"} {
		if _, err := serving.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("serving certificate for %s: %v", host, err)
		}
	}
	kc, err := os.ReadFile(b.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// A wildcard bind address is reached on the loopback address.
	if !strings.Contains(string(kc), "server: https://127.0.0.1:6443\n") {
		t.Errorf("kubeconfig server:\n%s", kc)
	}
	if fi, _ := os.Stat(b.Kubeconfig); fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v", fi.Mode())
	}
	// The admin's certificate passes the bundle's client CA pool.
	admin, err := os.ReadFile(filepath.Join(dir, "pki", certs.AdminCertFile))
	if err != nil {
		t.Fatal(err)
	}
	adminPair := certs.Pair{CertPEM: admin, KeyPEM: must(os.ReadFile(filepath.Join(dir, "pki", certs.AdminKeyFile)))}
	al := parseLeaf(t, adminPair)
	if _, err := al.Verify(x509.VerifyOptions{Roots: b.ClientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil ||
		al.Subject.CommonName != "admin" || len(al.Subject.Organization) != 1 || al.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin certificate %v: %v", al.Subject, err)
	}

	// A restart reuses everything.
	again, err := certs.Bootstrap(dir, "0.0.0.0", 6443)
	if err != nil {
		t.Fatal(err)
	}
	if !again.CA.Cert.Equal(b.CA.Cert) || !bytes.Equal(again.Serving.Certificate[0], b.Serving.Certificate[0]) {
		t.Error("a restart made new certificates")
	}
	// A new host reissues the serving certificate from the same CA.
	moved, err := certs.Bootstrap(dir, "10.1.2.3", 7443, "api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := x509.ParseCertificate(moved.Serving.Certificate[0])
	if !moved.CA.Cert.Equal(b.CA.Cert) || bytes.Equal(moved.Serving.Certificate[0], b.Serving.Certificate[0]) {
		t.Error("a new host did not reissue the serving certificate from the same CA")
	}
	for _, host := range []string{"10.1.2.3", "api.example.com", "127.0.0.1"} {
		if _, err := ms.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("reissued certificate for %s: %v", host, err)
		}
	}
	if kc, _ := os.ReadFile(moved.Kubeconfig); !strings.Contains(string(kc), "server: https://10.1.2.3:7443\n") {
		t.Errorf("kubeconfig after the move:\n%s", kc)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
