// Package certs generates and loads the X.509 material an API server needs
// when none is given: a CA, a serving certificate for the server's names and
// addresses, and client certificates (CN = user, O = groups), all as PEM.
// Keys are ECDSA P-256: fast to make and to handshake with.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that can issue certificates.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertPEM and KeyPEM are the PEM encodings of Cert and Key.
	CertPEM, KeyPEM []byte
}

// Pair is an issued certificate and its key in PEM.
type Pair struct {
	CertPEM, KeyPEM []byte
}

// TLSCertificate parses the pair for crypto/tls.
func (p Pair) TLSCertificate() (tls.Certificate, error) {
	return tls.X509KeyPair(p.CertPEM, p.KeyPEM)
}

// WriteFiles writes the pair to keyPath (mode 0600) and certPath (0644),
// each atomically: the key first, so that a reader of the certificate,
// such as KeyPairFiles during a rotation, finds the two match once it has
// the new certificate.
func (p Pair) WriteFiles(certPath, keyPath string) error {
	if err := WriteFile(keyPath, p.KeyPEM, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", keyPath, err)
	}
	if err := WriteFile(certPath, p.CertPEM, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", certPath, err)
	}
	return nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding key: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// NewCA makes a self-signed CA valid for validity.
func NewCA(commonName string, validity time.Duration) (*CA, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("signing CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, KeyPEM: keyPEM,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// ParseCA reads a CA from PEM.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing CA: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("certificate is not a CA")
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("CA key cannot sign")
	}
	return &CA{Cert: cert, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

func (ca *CA) issue(tmpl *x509.Certificate) (Pair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return Pair{}, err
	}
	sn, err := serial()
	if err != nil {
		return Pair{}, err
	}
	tmpl.SerialNumber = sn
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return Pair{}, fmt.Errorf("signing certificate: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return Pair{CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// IssueServing issues a serving certificate for the given host names and IP
// addresses; the first host is the subject's common name.
func (ca *CA) IssueServing(hosts []string, validity time.Duration) (Pair, error) {
	if len(hosts) == 0 {
		return Pair{}, errors.New("a serving certificate needs at least one host")
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(validity),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.issue(tmpl)
}

// IssueClient issues a client certificate: Kubernetes reads the common name
// as the user and the organizations as groups.
func (ca *CA) IssueClient(user string, groups []string, validity time.Duration) (Pair, error) {
	now := time.Now()
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(validity),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// PoolFromPEM parses PEM certificates into a pool.
func PoolFromPEM(pemBytes []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, errors.New("no PEM certificates found")
	}
	return pool, nil
}

// WriteFile writes data to path atomically (a rename), creating the
// directory; private keys get mode 0600.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// LoadOrCreateCA reads the CA at certPath/keyPath, or creates and writes one
// when neither file exists.
func LoadOrCreateCA(certPath, keyPath, commonName string, validity time.Duration) (*CA, error) {
	certPEM, cerr := os.ReadFile(certPath)
	keyPEM, kerr := os.ReadFile(keyPath)
	switch {
	case cerr == nil && kerr == nil:
		return ParseCA(certPEM, keyPEM)
	case errors.Is(cerr, os.ErrNotExist) && errors.Is(kerr, os.ErrNotExist):
	case cerr != nil:
		return nil, fmt.Errorf("reading %s: %w", certPath, cerr)
	default:
		return nil, fmt.Errorf("reading %s: %w", keyPath, kerr)
	}
	ca, err := NewCA(commonName, validity)
	if err != nil {
		return nil, err
	}
	if err := WriteFile(keyPath, ca.KeyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := WriteFile(certPath, ca.CertPEM, 0o644); err != nil {
		return nil, err
	}
	return ca, nil
}

// LoadOrIssue reads the pair at certPath/keyPath if it exists, is valid for
// another day and, for serving pairs, covers hosts; otherwise it issues a new
// one with issue and writes it.
func LoadOrIssue(certPath, keyPath string, hosts []string, issue func() (Pair, error)) (Pair, error) {
	return loadOrIssueIf(certPath, keyPath, func(leaf *x509.Certificate) bool { return covers(leaf, hosts) }, issue)
}

// loadOrIssueIf reuses the stored pair when it parses, is valid for another
// day and satisfies ok; otherwise it issues and writes a new one.
func loadOrIssueIf(certPath, keyPath string, ok func(*x509.Certificate) bool, issue func() (Pair, error)) (Pair, error) {
	certPEM, cerr := os.ReadFile(certPath)
	keyPEM, kerr := os.ReadFile(keyPath)
	if cerr == nil && kerr == nil {
		p := Pair{CertPEM: certPEM, KeyPEM: keyPEM}
		if tc, err := p.TLSCertificate(); err == nil {
			if leaf, err := x509.ParseCertificate(tc.Certificate[0]); err == nil && time.Until(leaf.NotAfter) > 24*time.Hour && ok(leaf) {
				return p, nil
			}
		}
	}
	p, err := issue()
	if err != nil {
		return Pair{}, err
	}
	if err := WriteFile(keyPath, p.KeyPEM, 0o600); err != nil {
		return Pair{}, err
	}
	if err := WriteFile(certPath, p.CertPEM, 0o644); err != nil {
		return Pair{}, err
	}
	return p, nil
}

func covers(leaf *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if leaf.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}
