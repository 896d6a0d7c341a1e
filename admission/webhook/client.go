package webhook

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/certs"
	iwebhook "github.com/apikit-dev/apikit/internal/webhook"
)

// ServiceResolver finds where a port of a Service is reached: the
// aggregator's resolvers (server/aggregator) are ones.
type ServiceResolver interface {
	ResolveEndpoint(namespace, name string, port int32) (*url.URL, error)
}

// Credentials are what the server presents to the webhooks of one host:
// kube-apiserver's webhook kubeconfig (the AdmissionConfiguration's
// kubeConfigFile), whose users are named after the hosts they are for.
type Credentials struct {
	// Users maps a host name to the credentials for it: "host:port",
	// "host", "*.domain" (any host under domain) or "*" (any host). Of a
	// Kubeconfig only Client, Token and TokenFile are read.
	Users map[string]certs.Kubeconfig
}

// For returns the credentials for hostPort, looked up as kube-apiserver
// does: host:port, then host, then the wildcards from the most specific,
// then "*". A missing port is 443.
func (c *Credentials) For(hostPort string) (name string, user certs.Kubeconfig, ok bool) {
	if c == nil || len(c.Users) == 0 {
		return "", certs.Kubeconfig{}, false
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		host, port = hostPort, "443"
	}
	candidates := []string{net.JoinHostPort(host, port), host}
	for rest := host; ; {
		_, after, found := strings.Cut(rest, ".")
		if !found {
			break
		}
		candidates = append(candidates, "*."+after)
		rest = after
	}
	candidates = append(candidates, "*")
	for _, n := range candidates {
		if u, ok := c.Users[n]; ok {
			return n, u, true
		}
	}
	return "", certs.Kubeconfig{}, false
}

// maxClients bounds the client cache; a fresh set is started when full
// (CA bundles rotate rarely).
const maxClients = 256

// clients are the shared HTTP clients, one per CA bundle, TLS server name
// and credentials, so that every call to a webhook reuses a connection.
type clients struct {
	resolver ServiceResolver
	creds    *Credentials
	mu       sync.Mutex
	byKey    map[string]*http.Client
}

// target is where one call goes and with what.
type target struct {
	url   string
	token string
	http  *http.Client
}

// targetFor resolves a webhook's client configuration.
func (c *clients) targetFor(cc *registration.WebhookClientConfig, timeoutSeconds int) (target, error) {
	var u *url.URL
	serverName := ""
	switch {
	case cc.URL != nil:
		var err error
		if u, err = url.Parse(*cc.URL); err != nil {
			return target{}, fmt.Errorf("invalid webhook URL: %w", err)
		}
	case cc.Service != nil:
		if c.resolver == nil {
			return target{}, errors.New("no service resolver: this server cannot call webhooks behind a Service")
		}
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		base, err := c.resolver.ResolveEndpoint(cc.Service.Namespace, cc.Service.Name, port)
		if err != nil {
			return target{}, err
		}
		u = &url.URL{Scheme: "https", Host: base.Host}
		if cc.Service.Path != nil {
			u.Path = *cc.Service.Path
		}
		// The serving certificate names the Service, as kube-apiserver
		// checks it.
		serverName = cc.Service.Name + "." + cc.Service.Namespace + ".svc"
	default:
		return target{}, errors.New("the webhook has neither a url nor a service")
	}
	credHost := u.Host
	if serverName != "" {
		credHost = net.JoinHostPort(serverName, strconv.Itoa(int(portOf(cc))))
	}
	userName, user, _ := c.creds.For(credHost)
	hc, err := c.client(cc.CABundle, serverName, userName, user)
	if err != nil {
		return target{}, err
	}
	// kube-apiserver tells the webhook how long it waits.
	q := u.Query()
	q.Set("timeout", strconv.Itoa(timeoutSeconds)+"s")
	u.RawQuery = q.Encode()
	return target{url: u.String(), token: user.BearerToken(), http: hc}, nil
}

func portOf(cc *registration.WebhookClientConfig) int32 {
	if cc.Service != nil && cc.Service.Port != nil {
		return *cc.Service.Port
	}
	return 443
}

// client returns the shared client for a CA bundle, server name and user.
func (c *clients) client(caBundle []byte, serverName, userName string, user certs.Kubeconfig) (*http.Client, error) {
	sum := sha256.Sum256(caBundle)
	key := string(sum[:]) + "\x00" + serverName + "\x00" + userName
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
	if len(user.Client.CertPEM) > 0 {
		cert, err := tls.X509KeyPair(user.Client.CertPEM, user.Client.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("the client certificate for %s: %w", userName, err)
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
	}
	if c.byKey == nil || len(c.byKey) >= maxClients {
		for _, old := range c.byKey {
			old.CloseIdleConnections()
		}
		c.byKey = map[string]*http.Client{}
	}
	// The call's context bounds each call (the webhook's timeout).
	hc := &http.Client{Transport: iwebhook.NewTransport(tlsConfig)}
	c.byKey[key] = hc
	return hc, nil
}
