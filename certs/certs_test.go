package certs_test

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/apikit-dev/apikit/certs"
)

func parseLeaf(t *testing.T, p certs.Pair) *x509.Certificate {
	t.Helper()
	tc, err := p.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(tc.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

func TestIssue(t *testing.T) {
	ca, err := certs.NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || ca.Cert.Subject.CommonName != "test-ca" || ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA %+v", ca.Cert)
	}
	roots, err := certs.PoolFromPEM(ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}

	serving, err := ca.IssueServing([]string{"api.example.com", "127.0.0.1", "localhost", "::1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf := parseLeaf(t, serving)
	if leaf.Subject.CommonName != "api.example.com" || !slices.Equal(leaf.DNSNames, []string{"api.example.com", "localhost"}) ||
		len(leaf.IPAddresses) != 2 || !leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) || !leaf.IPAddresses[1].Equal(net.IPv6loopback) {
		t.Errorf("serving names %s %v %v", leaf.Subject.CommonName, leaf.DNSNames, leaf.IPAddresses)
	}
	for _, host := range []string{"api.example.com", "127.0.0.1", "localhost", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("serving certificate for %s: %v", host, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "other.example.com", Roots: roots}); err == nil {
		t.Error("serving certificate valid for a host it does not name")
	}
	if _, err := ca.IssueServing(nil, time.Hour); err == nil {
		t.Error("a serving certificate for no host")
	}

	client, err := ca.IssueClient("alice", []string{"devs", "system:masters"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cl := parseLeaf(t, client)
	if cl.Subject.CommonName != "alice" || !slices.Equal(cl.Subject.Organization, []string{"devs", "system:masters"}) {
		t.Errorf("client subject %v", cl.Subject)
	}
	if _, err := cl.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if _, err := cl.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("a client certificate is good for serving")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("a serving certificate is good for clients")
	}
	if serving.KeyPEM == nil || bytes.Equal(serving.KeyPEM, client.KeyPEM) || bytes.Equal(serving.KeyPEM, ca.KeyPEM) {
		t.Error("keys shared between certificates")
	}
}

func TestParseCA(t *testing.T) {
	ca, err := certs.NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	again, err := certs.ParseCA(ca.CertPEM, ca.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cert.Equal(ca.Cert) {
		t.Error("parsed CA differs")
	}
	// A parsed CA issues certificates the original's pool accepts.
	p, err := again.IssueClient("bob", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots, _ := certs.PoolFromPEM(ca.CertPEM)
	if _, err := parseLeaf(t, p).Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Error(err)
	}
	leafPair, _ := ca.IssueServing([]string{"x"}, time.Hour)
	if _, err := certs.ParseCA(leafPair.CertPEM, leafPair.KeyPEM); err == nil {
		t.Error("a serving certificate parsed as a CA")
	}
	other, _ := certs.NewCA("other", time.Hour)
	if _, err := certs.ParseCA(ca.CertPEM, other.KeyPEM); err == nil {
		t.Error("a CA with another CA's key")
	}
	if _, err := certs.PoolFromPEM([]byte("not pem")); err == nil {
		t.Error("a pool from nothing")
	}
}

func TestLoadOrCreateCA(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "pki", "ca.crt"), filepath.Join(dir, "pki", "ca.key")
	ca, err := certs.LoadOrCreateCA(certPath, keyPath, "test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v %v", fi.Mode(), err)
	}
	again, err := certs.LoadOrCreateCA(certPath, keyPath, "ignored", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cert.Equal(ca.Cert) {
		t.Error("the CA was not reused")
	}
	// One file without the other is an error, not a new CA that would
	// orphan every certificate the old one signed.
	if err := os.Remove(keyPath); err != nil {
		t.Fatal(err)
	}
	if _, err := certs.LoadOrCreateCA(certPath, keyPath, "test-ca", time.Hour); err == nil {
		t.Error("a CA certificate without its key was replaced silently")
	}
}

func TestLoadOrIssue(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.NewCA("test-ca", 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(dir, "s.crt"), filepath.Join(dir, "s.key")
	issued := 0
	issuer := func(hosts []string, validity time.Duration) func() (certs.Pair, error) {
		return func() (certs.Pair, error) {
			issued++
			return ca.IssueServing(hosts, validity)
		}
	}
	load := func(hosts []string, validity time.Duration) certs.Pair {
		t.Helper()
		p, err := certs.LoadOrIssue(certPath, keyPath, hosts, issuer(hosts, validity))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := load([]string{"localhost", "127.0.0.1"}, 47*time.Hour)
	if issued != 1 {
		t.Fatalf("issued %d", issued)
	}
	for _, step := range []struct {
		name    string
		hosts   []string
		reissue bool
	}{
		{"same hosts: reused", []string{"localhost", "127.0.0.1"}, false},
		{"fewer hosts: still covered, reused", []string{"127.0.0.1"}, false},
		{"a new host: reissued", []string{"localhost", "127.0.0.1", "api.example.com"}, true},
		{"then reused", []string{"api.example.com"}, false},
	} {
		before := issued
		p := load(step.hosts, 47*time.Hour)
		if got := issued > before; got != step.reissue {
			t.Errorf("%s: reissued=%v", step.name, got)
		}
		if !step.reissue && issued == 1 && !bytes.Equal(p.CertPEM, first.CertPEM) {
			t.Errorf("%s: answered another certificate", step.name)
		}
		if disk, _ := os.ReadFile(certPath); !bytes.Equal(disk, p.CertPEM) {
			t.Errorf("%s: the file does not hold the answer", step.name)
		}
	}

	// A certificate expiring within a day is reissued.
	if err := os.Remove(certPath); err != nil {
		t.Fatal(err)
	}
	load([]string{"localhost"}, 12*time.Hour)
	before := issued
	load([]string{"localhost"}, 47*time.Hour)
	if issued != before+1 {
		t.Error("a certificate expiring within a day was reused")
	}
	// Garbage on disk is replaced.
	if err := os.WriteFile(certPath, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	before = issued
	p := load([]string{"localhost"}, 47*time.Hour)
	if issued != before+1 || parseLeaf(t, p).Subject.CommonName != "localhost" {
		t.Error("a corrupt certificate file was not replaced")
	}
	if fi, _ := os.Stat(keyPath); fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", fi.Mode())
	}
}

func TestKubeconfig(t *testing.T) {
	ca, err := certs.NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.IssueClient("admin", []string{"system:masters"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	type kubeconfig struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Clusters   []struct {
			Name    string `json:"name"`
			Cluster struct {
				Server                   string `json:"server"`
				CertificateAuthorityData []byte `json:"certificate-authority-data"`
				TLSServerName            string `json:"tls-server-name"`
			} `json:"cluster"`
		} `json:"clusters"`
		Users []struct {
			Name string `json:"name"`
			User struct {
				ClientCertificateData []byte `json:"client-certificate-data"`
				ClientKeyData         []byte `json:"client-key-data"`
				Token                 string `json:"token"`
			} `json:"user"`
		} `json:"users"`
		Contexts []struct {
			Name    string `json:"name"`
			Context struct {
				Cluster string `json:"cluster"`
				User    string `json:"user"`
			} `json:"context"`
		} `json:"contexts"`
		CurrentContext string `json:"current-context"`
	}
	parse := func(k certs.Kubeconfig) kubeconfig {
		t.Helper()
		b, err := k.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var kc kubeconfig
		if err := yaml.UnmarshalStrict(b, &kc); err != nil {
			t.Fatalf("%v in\n%s", err, b)
		}
		return kc
	}

	kc := parse(certs.Kubeconfig{Server: "https://127.0.0.1:6443", CAPEM: ca.CertPEM, Client: client})
	if kc.APIVersion != "v1" || kc.Kind != "Config" || kc.CurrentContext != "apikit" ||
		len(kc.Clusters) != 1 || len(kc.Users) != 1 || len(kc.Contexts) != 1 ||
		kc.Clusters[0].Name != "apikit" || kc.Users[0].Name != "apikit" ||
		kc.Contexts[0].Name != "apikit" || kc.Contexts[0].Context.Cluster != "apikit" || kc.Contexts[0].Context.User != "apikit" {
		t.Errorf("structure %+v", kc)
	}
	c := kc.Clusters[0].Cluster
	if c.Server != "https://127.0.0.1:6443" || !bytes.Equal(c.CertificateAuthorityData, ca.CertPEM) || c.TLSServerName != "" {
		t.Errorf("cluster %+v", c)
	}
	u := kc.Users[0].User
	if !bytes.Equal(u.ClientCertificateData, client.CertPEM) || !bytes.Equal(u.ClientKeyData, client.KeyPEM) || u.Token != "" {
		t.Errorf("user %+v", u)
	}
	if blk, _ := pem.Decode(u.ClientKeyData); blk == nil {
		t.Error("client key is not PEM")
	}

	kc = parse(certs.Kubeconfig{Server: "https://h:1", CAPEM: ca.CertPEM, Token: "t0ken", Name: "mine", TLSServerName: "api.internal"})
	if kc.CurrentContext != "mine" || kc.Users[0].User.Token != "t0ken" || kc.Users[0].User.ClientKeyData != nil ||
		kc.Clusters[0].Cluster.TLSServerName != "api.internal" {
		t.Errorf("token kubeconfig %+v", kc)
	}

	path := filepath.Join(t.TempDir(), "sub", "kubeconfig")
	if err := (certs.Kubeconfig{Server: "https://h:1", CAPEM: ca.CertPEM, Client: client}).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v %v", fi.Mode(), err)
	}
}
