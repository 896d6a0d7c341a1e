package main

import (
	"crypto/tls"
	"fmt"
	"path/filepath"
	"time"

	"github.com/apikit-dev/apikit/certs"
)

// pkiFiles are the certificate files both servers are started with.
type pkiFiles struct {
	caCert                  string // verifies client certificates
	servingCert, servingKey string
	// caPEM and client make each server's kubeconfig.
	caPEM  []byte
	client certs.Pair
}

// benchUser is the load generator's identity: a cluster admin, which
// kube-style API Priority and Fairness exempts from queueing.
const (
	benchUser  = "bench-admin"
	benchGroup = "system:masters"
)

// makePKI writes a CA, a serving certificate for 127.0.0.1 and a client
// certificate for benchUser into dir, and returns the files and the
// client's TLS configuration. Both servers get the same files.
func makePKI(dir string) (pkiFiles, *tls.Config, error) {
	ca, err := certs.NewCA("apikit-bench-ca", 24*time.Hour)
	if err != nil {
		return pkiFiles{}, nil, fmt.Errorf("making the CA: %w", err)
	}
	serving, err := ca.IssueServing([]string{"127.0.0.1", "localhost"}, 24*time.Hour)
	if err != nil {
		return pkiFiles{}, nil, fmt.Errorf("issuing the serving certificate: %w", err)
	}
	client, err := ca.IssueClient(benchUser, []string{benchGroup}, 24*time.Hour)
	if err != nil {
		return pkiFiles{}, nil, fmt.Errorf("issuing the client certificate: %w", err)
	}
	f := pkiFiles{
		caCert:      filepath.Join(dir, "ca.crt"),
		servingCert: filepath.Join(dir, "serving.crt"),
		servingKey:  filepath.Join(dir, "serving.key"),
		caPEM:       ca.CertPEM,
		client:      client,
	}
	for path, data := range map[string][]byte{f.caCert: ca.CertPEM, f.servingCert: serving.CertPEM, f.servingKey: serving.KeyPEM} {
		if err := certs.WriteFile(path, data, 0o600); err != nil {
			return pkiFiles{}, nil, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	pair, err := client.TLSCertificate()
	if err != nil {
		return pkiFiles{}, nil, fmt.Errorf("loading the client certificate: %w", err)
	}
	pool, err := certs.PoolFromPEM(ca.CertPEM)
	if err != nil {
		return pkiFiles{}, nil, fmt.Errorf("loading the CA: %w", err)
	}
	return f, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// writeKubeconfig writes a kubeconfig for the benchmark's user of the
// server at url, for looking at a server by hand (with -keep).
func (p pkiFiles) writeKubeconfig(path, url string) error {
	k := certs.Kubeconfig{Server: url, CAPEM: p.caPEM, Client: p.client, Name: "bench"}
	if err := k.WriteFile(path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
