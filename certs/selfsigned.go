package certs

import (
	"crypto/x509"
	"fmt"
	"path/filepath"
	"time"
)

// File names under a certificate directory, shared by SelfSigned,
// WriteAdminKubeconfig and Bootstrap so that every server keeps its PKI the
// same way and finds it again on restart.
const (
	CACertFile      = "ca.crt"
	CAKeyFile       = "ca.key"
	ServingCertFile = "apiserver.crt"
	ServingKeyFile  = "apiserver.key"
	AdminCertFile   = "admin.crt"
	AdminKeyFile    = "admin.key"
)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
)

// SelfSigned returns a CA and a serving certificate it signed for hosts
// (DNS names and IP addresses; the first is the subject's common name).
//
// With dir set both are kept there (ca.crt, ca.key, apiserver.crt,
// apiserver.key, keys mode 0600): made on first use, reused afterwards, the
// serving certificate reissued when it no longer covers hosts, was not
// signed by the CA, or expires within a day. With dir empty they are made in
// memory and last as long as the process.
func SelfSigned(dir string, hosts []string) (*CA, Pair, error) {
	if dir == "" {
		ca, err := NewCA("apikit-ca", caValidity)
		if err != nil {
			return nil, Pair{}, err
		}
		pair, err := ca.IssueServing(hosts, leafValidity)
		if err != nil {
			return nil, Pair{}, fmt.Errorf("serving certificate: %w", err)
		}
		return ca, pair, nil
	}
	ca, err := LoadOrCreateCA(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile), "apikit-ca", caValidity)
	if err != nil {
		return nil, Pair{}, fmt.Errorf("CA in %s: %w", dir, err)
	}
	pair, err := loadOrIssue(filepath.Join(dir, ServingCertFile), filepath.Join(dir, ServingKeyFile), hosts, ca,
		func() (Pair, error) { return ca.IssueServing(hosts, leafValidity) })
	if err != nil {
		return nil, Pair{}, fmt.Errorf("serving certificate in %s: %w", dir, err)
	}
	return ca, pair, nil
}

// WriteAdminKubeconfig issues, or reuses from dir (admin.crt, admin.key),
// a client certificate signed by ca for the user admin in the group
// system:masters, and writes to path (mode 0600) a kubeconfig that presents
// it to server, an https URL, and trusts ca. It returns the client pair.
func WriteAdminKubeconfig(path, dir string, ca *CA, server string) (Pair, error) {
	issue := func() (Pair, error) { return ca.IssueClient("admin", []string{"system:masters"}, leafValidity) }
	var admin Pair
	var err error
	if dir == "" {
		admin, err = issue()
	} else {
		admin, err = loadOrIssue(filepath.Join(dir, AdminCertFile), filepath.Join(dir, AdminKeyFile), nil, ca, issue)
	}
	if err != nil {
		return Pair{}, fmt.Errorf("admin certificate: %w", err)
	}
	kc := Kubeconfig{Server: server, CAPEM: ca.CertPEM, Client: admin}
	if err := kc.WriteFile(path); err != nil {
		return Pair{}, fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return admin, nil
}

// loadOrIssue is LoadOrIssue that also refuses a stored certificate that ca
// did not sign (the CA was replaced since).
func loadOrIssue(certPath, keyPath string, hosts []string, ca *CA, issue func() (Pair, error)) (Pair, error) {
	return loadOrIssueIf(certPath, keyPath, func(leaf *x509.Certificate) bool {
		return covers(leaf, hosts) && leaf.CheckSignatureFrom(ca.Cert) == nil
	}, issue)
}
