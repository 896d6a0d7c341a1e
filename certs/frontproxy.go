package certs

import (
	"fmt"
	"path/filepath"
)

// Files of the development front-proxy PKI, as kubeadm names them.
const (
	FrontProxyCACertFile     = "front-proxy-ca.crt"
	FrontProxyCAKeyFile      = "front-proxy-ca.key"
	FrontProxyClientCertFile = "front-proxy-client.crt"
	FrontProxyClientKeyFile  = "front-proxy-client.key"
	// FrontProxyClientName is the common name of the front proxy's client
	// certificate: what the servers behind it allow with
	// --requestheader-allowed-names.
	FrontProxyClientName = "front-proxy-client"
)

// FrontProxy makes, or reuses from dir, the PKI of an aggregator's front
// proxy: a CA of its own (front-proxy-ca.crt, .key), distinct from the
// serving CA so that a user's client certificate can never pass for the
// proxy, and the client certificate the aggregator presents to its
// backends (front-proxy-client.crt, .key; CN front-proxy-client). The
// backends trust the CA with --requestheader-client-ca-file. With dir
// empty both are made in memory.
func FrontProxy(dir string) (*CA, Pair, error) {
	issue := func(ca *CA) func() (Pair, error) {
		return func() (Pair, error) { return ca.IssueClient(FrontProxyClientName, nil, leafValidity) }
	}
	if dir == "" {
		ca, err := NewCA("front-proxy-ca", caValidity)
		if err != nil {
			return nil, Pair{}, err
		}
		pair, err := issue(ca)()
		return ca, pair, err
	}
	ca, err := LoadOrCreateCA(filepath.Join(dir, FrontProxyCACertFile), filepath.Join(dir, FrontProxyCAKeyFile), "front-proxy-ca", caValidity)
	if err != nil {
		return nil, Pair{}, fmt.Errorf("front-proxy CA in %s: %w", dir, err)
	}
	pair, err := loadOrIssue(filepath.Join(dir, FrontProxyClientCertFile), filepath.Join(dir, FrontProxyClientKeyFile), nil, ca, issue(ca))
	if err != nil {
		return nil, Pair{}, fmt.Errorf("front-proxy client certificate in %s: %w", dir, err)
	}
	return ca, pair, nil
}
