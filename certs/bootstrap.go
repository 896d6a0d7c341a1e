package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"
)

// Bundle is what Bootstrap makes: everything a development server needs to
// serve TLS and to let an administrator in with kubectl.
type Bundle struct {
	// CA signs the serving and client certificates and verifies clients.
	CA *CA
	// Serving is the server's certificate.
	Serving tls.Certificate
	// ClientCAs verifies client certificates (the CA).
	ClientCAs *x509.CertPool
	// Kubeconfig is the path of a kubeconfig for the admin user
	// (CN=admin, O=system:masters).
	Kubeconfig string
}

// Bootstrap makes, on first use, a CA, a serving certificate for localhost,
// the loopback addresses and hosts, an admin client certificate and a
// kubeconfig pointing at https://host:port, all under dir; later calls reuse
// them (reissuing a serving certificate whose hosts changed). Files holding
// keys are mode 0600.
func Bootstrap(dir, host string, port int, hosts ...string) (*Bundle, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	pki := filepath.Join(dir, "pki")
	const year = 365 * 24 * time.Hour
	ca, err := LoadOrCreateCA(filepath.Join(pki, "ca.crt"), filepath.Join(pki, "ca.key"), "apikit-ca", 10*year)
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	names := []string{"localhost", "127.0.0.1", "::1"}
	for _, h := range append([]string{host}, hosts...) {
		if !contains(names, h) {
			names = append(names, h)
		}
	}
	serving, err := LoadOrIssue(filepath.Join(pki, "apiserver.crt"), filepath.Join(pki, "apiserver.key"), names,
		func() (Pair, error) { return ca.IssueServing(names, year) })
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	admin, err := LoadOrIssue(filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"), nil,
		func() (Pair, error) { return ca.IssueClient("admin", []string{"system:masters"}, year) })
	if err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}
	kc := Kubeconfig{Server: "https://" + net.JoinHostPort(host, strconv.Itoa(port)), CAPEM: ca.CertPEM, Client: admin}
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := kc.WriteFile(kcPath); err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	tc, err := serving.TLSCertificate()
	if err != nil {
		return nil, err
	}
	pool, err := PoolFromPEM(ca.CertPEM)
	if err != nil {
		return nil, err
	}
	return &Bundle{CA: ca, Serving: tc, ClientCAs: pool, Kubeconfig: kcPath}, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
