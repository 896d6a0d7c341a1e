package certs

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

func leaf(t *testing.T, p Pair) *x509.Certificate {
	t.Helper()
	tc, err := p.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(tc.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSelfSignedKeptAndReused(t *testing.T) {
	dir := t.TempDir()
	hosts := []string{"10.1.2.3", "localhost", "127.0.0.1"}
	ca1, p1, err := SelfSigned(dir, hosts)
	if err != nil {
		t.Fatal(err)
	}
	l := leaf(t, p1)
	if l.Subject.CommonName != "10.1.2.3" || l.CheckSignatureFrom(ca1.Cert) != nil {
		t.Fatalf("serving certificate CN=%s, signed by the CA: %v", l.Subject.CommonName, l.CheckSignatureFrom(ca1.Cert))
	}
	for _, h := range hosts {
		if err := l.VerifyHostname(h); err != nil {
			t.Errorf("certificate does not cover %s: %v", h, err)
		}
	}
	for _, f := range []string{CACertFile, CAKeyFile, ServingCertFile, ServingKeyFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, ServingKeyFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", fi.Mode().Perm())
	}

	// A restart with the same hosts reuses both.
	ca2, p2, err := SelfSigned(dir, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ca1.CertPEM, ca2.CertPEM) || !bytes.Equal(p1.CertPEM, p2.CertPEM) {
		t.Error("restart made new certificates")
	}

	// A new host reissues the serving certificate from the same CA.
	_, p3, err := SelfSigned(dir, append(hosts, "wardle.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(p1.CertPEM, p3.CertPEM) || leaf(t, p3).VerifyHostname("wardle.example.com") != nil || leaf(t, p3).CheckSignatureFrom(ca1.Cert) != nil {
		t.Error("a new host did not reissue the serving certificate from the same CA")
	}

	// A replaced CA reissues the serving certificate too.
	for _, f := range []string{CACertFile, CAKeyFile} {
		os.Remove(filepath.Join(dir, f))
	}
	ca4, p4, err := SelfSigned(dir, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if leaf(t, p4).CheckSignatureFrom(ca4.Cert) != nil {
		t.Error("serving certificate of the old CA kept after the CA changed")
	}
}

func TestSelfSignedInMemory(t *testing.T) {
	ca, p, err := SelfSigned("", []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	if leaf(t, p).CheckSignatureFrom(ca.Cert) != nil {
		t.Error("not signed by the CA")
	}
}

func TestWriteAdminKubeconfig(t *testing.T) {
	dir := t.TempDir()
	ca, _, err := SelfSigned(dir, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kubeconfig")
	a1, err := WriteAdminKubeconfig(path, dir, ca, "https://127.0.0.1:8443")
	if err != nil {
		t.Fatal(err)
	}
	l := leaf(t, a1)
	if l.Subject.CommonName != "admin" || len(l.Subject.Organization) != 1 || l.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin subject %v", l.Subject)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig: %v %v", fi, err)
	}
	data, _ := os.ReadFile(path)
	var kc struct {
		Clusters []struct {
			Cluster struct {
				Server string `json:"server"`
			} `json:"cluster"`
		} `json:"clusters"`
	}
	if err := yaml.Unmarshal(data, &kc); err != nil || len(kc.Clusters) != 1 || kc.Clusters[0].Cluster.Server != "https://127.0.0.1:8443" {
		t.Fatalf("kubeconfig %s: %v", data, err)
	}
	a2, err := WriteAdminKubeconfig(path, dir, ca, "https://127.0.0.1:9443")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a1.CertPEM, a2.CertPEM) {
		t.Error("admin certificate not reused")
	}
}
