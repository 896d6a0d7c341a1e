package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
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
// kubeconfig pointing at https://host:port, all under dir (the PKI in
// dir/pki, see SelfSigned and WriteAdminKubeconfig); later calls reuse them
// (reissuing a serving certificate whose hosts changed). Files holding keys
// are mode 0600. Servers built with the options package get the same PKI
// from its flags (--cert-dir, --dev-pki) and need not call Bootstrap.
func Bootstrap(dir, host string, port int, hosts ...string) (*Bundle, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	pki := filepath.Join(dir, "pki")
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	names := []string{"localhost", "127.0.0.1", "::1"}
	for _, h := range append([]string{host}, hosts...) {
		if !contains(names, h) {
			names = append(names, h)
		}
	}
	ca, serving, err := SelfSigned(pki, names)
	if err != nil {
		return nil, err
	}
	kcPath := filepath.Join(dir, "kubeconfig")
	if _, err := WriteAdminKubeconfig(kcPath, pki, ca, "https://"+net.JoinHostPort(host, strconv.Itoa(port))); err != nil {
		return nil, err
	}
	tc, err := serving.TLSCertificate()
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
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
