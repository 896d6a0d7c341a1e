package webhook

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"sync"
)

// maxCachedClients bounds a Clients cache; a fresh set is started when it
// is full (CA bundles rotate rarely).
const maxCachedClients = 256

// Clients hands out one HTTP client per CA bundle and TLS server name, so
// that every call to a webhook so configured reuses its connections (no
// new TLS handshake per call), as kube-apiserver's webhook client manager
// caches its clients. The zero value is ready; it is safe for concurrent
// use. Calls are bounded by their context, not by the client.
type Clients struct {
	mu    sync.Mutex
	byKey map[string]*http.Client
}

// Get returns the client that verifies servers with caBundle (PEM; the
// system roots when empty) under serverName (the URL's host when empty).
func (c *Clients) Get(caBundle []byte, serverName string) (*http.Client, error) {
	sum := sha256.Sum256(caBundle)
	key := string(sum[:]) + "\x00" + serverName
	c.mu.Lock()
	defer c.mu.Unlock()
	if hc, ok := c.byKey[key]; ok {
		return hc, nil
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("the caBundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	if c.byKey == nil || len(c.byKey) >= maxCachedClients {
		for _, old := range c.byKey {
			old.CloseIdleConnections()
		}
		c.byKey = map[string]*http.Client{}
	}
	hc := &http.Client{Transport: NewTransport(tlsConfig)}
	c.byKey[key] = hc
	return hc, nil
}

// CloseIdleConnections closes the idle connections of every client.
func (c *Clients) CloseIdleConnections() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, hc := range c.byKey {
		hc.CloseIdleConnections()
	}
}
