package certs_test

import (
	"bytes"
	"crypto/tls"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/certs"
)

func TestKeyPairFiles(t *testing.T) {
	ca, err := certs.NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(host string) certs.Pair {
		p, err := ca.IssueServing([]string{host}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(path string, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	leafHost := func(c *tls.Certificate) string {
		if c == nil || c.Leaf == nil {
			t.Fatalf("certificate %v without a parsed leaf", c)
		}
		return c.Leaf.DNSNames[0]
	}

	a, b := issue("a.example.com"), issue("b.example.com")
	write(certPath, a.CertPEM)
	write(keyPath, a.KeyPEM)
	kp, err := certs.NewKeyPairFiles(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := leafHost(kp.Current()); got != "a.example.com" {
		t.Fatalf("loaded %s", got)
	}

	// Half a rotation: b's certificate beside a's key. The pair in use
	// stays, and the failure is reported.
	write(certPath, b.CertPEM)
	if err := kp.Reload(); err == nil {
		t.Error("a mismatched certificate and key loaded")
	}
	if got := leafHost(kp.Current()); got != "a.example.com" {
		t.Errorf("after half a rotation: %s", got)
	}
	// The rotation completes: b from now on, for servers and clients.
	write(keyPath, b.KeyPEM)
	if err := kp.Reload(); err != nil {
		t.Fatal(err)
	}
	for name, get := range map[string]func() (*tls.Certificate, error){
		"Current":              func() (*tls.Certificate, error) { return kp.Current(), nil },
		"GetCertificate":       func() (*tls.Certificate, error) { return kp.GetCertificate(nil) },
		"GetClientCertificate": func() (*tls.Certificate, error) { return kp.GetClientCertificate(nil) },
	} {
		c, err := get()
		if err != nil || leafHost(c) != "b.example.com" {
			t.Errorf("%s after the rotation: %v %v", name, c, err)
		}
	}
	// Files that disappear leave b in place.
	if err := os.Remove(keyPath); err != nil {
		t.Fatal(err)
	}
	if err := kp.Reload(); err == nil {
		t.Error("a missing key loaded")
	}
	if got := leafHost(kp.Current()); got != "b.example.com" {
		t.Errorf("with the key gone: %s", got)
	}
	if !bytes.Equal(kp.Current().Certificate[0], mustLeafDER(t, b.CertPEM)) {
		t.Error("the pair in use is not b's")
	}
	if _, err := certs.NewKeyPairFiles(certPath, keyPath); err == nil {
		t.Error("NewKeyPairFiles without a key file succeeded")
	}
}

// TestKeyPairFilesLazyReload checks that handshakes pick up a rotation by
// themselves, within the check interval.
func TestKeyPairFilesLazyReload(t *testing.T) {
	ca, err := certs.NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	issue := func(host string) certs.Pair {
		p, err := ca.IssueServing([]string{host}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := issue("one.example.com").WriteFiles(certPath, keyPath); err != nil {
		t.Fatal(err)
	}
	kp, err := certs.NewKeyPairFiles(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := issue("three.example.com").WriteFiles(certPath, keyPath); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for kp.Current().Leaf.DNSNames[0] != "three.example.com" {
		if time.Now().After(deadline) {
			t.Fatal("the rotated pair was not picked up within 5 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mustLeafDER(t *testing.T, certPEM []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatal("not a PEM certificate")
	}
	return block.Bytes
}
