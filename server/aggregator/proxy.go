package aggregator

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"golang.org/x/net/http/httpguts"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server/respond"
	"github.com/apikit-dev/apikit/tracing"
)

// The headers that carry the user to a backend: the names kube-aggregator
// sends and that kube-apiserver publishes for delegated servers
// (--requestheader-*-headers).
const (
	HeaderUser        = "X-Remote-User"
	HeaderUID         = "X-Remote-Uid"
	HeaderGroup       = "X-Remote-Group"
	HeaderExtraPrefix = "X-Remote-Extra-"
)

// SetProxyHeaders replaces the front-proxy headers of h (whatever a
// client sent in them is dropped) with u's: X-Remote-User,
// X-Remote-Uid when u has one, one X-Remote-Group per group and
// X-Remote-Extra-<key> per extra value, the key %-escaped as
// kube-apiserver's front proxy does.
func SetProxyHeaders(h http.Header, u *authn.User) {
	for name := range h {
		if isProxyHeader(name) {
			delete(h, name)
		}
	}
	h.Set(HeaderUser, u.Name)
	if u.UID != "" {
		h.Set(HeaderUID, u.UID)
	}
	for _, g := range u.Groups {
		h.Add(HeaderGroup, g)
	}
	for k, vs := range u.Extra {
		name := HeaderExtraPrefix + escapeExtraKey(k)
		for _, v := range vs {
			h.Add(name, v)
		}
	}
}

func isProxyHeader(name string) bool {
	return strings.EqualFold(name, HeaderUser) || strings.EqualFold(name, HeaderUID) || strings.EqualFold(name, HeaderGroup) ||
		len(name) >= len(HeaderExtraPrefix) && strings.EqualFold(name[:len(HeaderExtraPrefix)], HeaderExtraPrefix)
}

// escapeExtraKey %-encodes the bytes of an extra key that may not appear
// in a header name, and "%" itself, so that the backend's
// authn.UnescapeExtraKey gets the key back.
func escapeExtraKey(key string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '%' || !httpguts.IsTokenRune(rune(c)) || c >= 0x80 {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// backend is how the requests of one remote APIService travel: its
// Service and the transports that verify the backend's certificate and
// present the front-proxy client certificate.
type backend struct {
	service    ServiceReference
	serverName string
	// transport speaks HTTP/2 when the backend does; upgrade is
	// HTTP/1.1 only, for requests that switch protocols (exec, attach,
	// port-forward over SPDY or WebSockets).
	transport, upgrade *http.Transport
	// tlsKey identifies the TLS settings, to keep the transports (and
	// their connections) while an update leaves them unchanged.
	tlsKey string
}

// tlsKey summarises what the transports of an APIService depend on.
func tlsKey(a *APIService) string {
	sum := sha256.Sum256(a.Spec.CABundle)
	svc := a.Spec.Service
	return fmt.Sprintf("%s/%s:%d|%t|%x", svc.Namespace, svc.Name, svc.PortOr443(), a.Spec.InsecureSkipTLSVerify, sum[:8])
}

// newBackend builds the transports of a remote APIService. The backend's
// certificate must name <service>.<namespace>.svc, as kube-aggregator
// checks it, and be signed by spec.caBundle (or the system roots when it
// is empty), unless spec.insecureSkipTLSVerify.
func newBackend(a *APIService, clientCert func(*tls.CertificateRequestInfo) (*tls.Certificate, error)) (*backend, error) {
	svc := *a.Spec.Service
	b := &backend{service: svc, serverName: svc.Name + "." + svc.Namespace + ".svc", tlsKey: tlsKey(a)}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: b.serverName}
	if a.Spec.InsecureSkipTLSVerify {
		tc.InsecureSkipVerify = true
	} else if len(a.Spec.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(a.Spec.CABundle) {
			return nil, errors.New("spec.caBundle holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	if clientCert != nil {
		tc.GetClientCertificate = clientCert
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	b.transport = &http.Transport{
		TLSClientConfig:     tc,
		ForceAttemptHTTP2:   true,
		DialContext:         dialer.DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     90 * time.Second,
		Proxy:               nil, // backends are reached directly, never through $HTTPS_PROXY
	}
	h1 := tc.Clone()
	h1.NextProtos = []string{"http/1.1"}
	b.upgrade = &http.Transport{
		TLSClientConfig:     h1,
		DialContext:         dialer.DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		// A non-nil empty map turns HTTP/2 off.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
		Proxy:        nil,
	}
	return b, nil
}

// close drops the idle connections of a backend no longer used.
func (b *backend) close() {
	b.transport.CloseIdleConnections()
	b.upgrade.CloseIdleConnections()
}

// RoundTrip sends upgrade requests over HTTP/1.1, the rest over the
// backend's preferred protocol.
func (b *backend) RoundTrip(r *http.Request) (*http.Response, error) {
	if httpguts.HeaderValuesContainsToken(r.Header["Connection"], "upgrade") {
		return b.upgrade.RoundTrip(r)
	}
	return b.transport.RoundTrip(r)
}

// serveProxy sends r to the backend of a remote APIService as the user
// the aggregator authenticated, streaming the answer (watches, upgrades).
// An unavailable APIService answers 503 at once: no dial is waited on.
func (a *Aggregator) serveProxy(w http.ResponseWriter, r *http.Request, svc *APIService, b *backend) {
	if !svc.IsAvailable() {
		respond.Error(w, r, meta.NewServiceUnavailable("service unavailable"))
		return
	}
	u, ok := authn.UserFrom(r.Context())
	if !ok {
		respond.Error(w, r, meta.NewInternalError(errors.New("missing user")))
		return
	}
	target, err := a.cfg.ServiceResolver.ResolveEndpoint(b.service.Namespace, b.service.Name, b.service.PortOr443())
	if err != nil {
		a.cfg.Logger.Info("aggregator: cannot resolve the service of an APIService", "apiservice", svc.Name, "err", err)
		a.probeSoon(svc.Name)
		respond.Error(w, r, meta.NewServiceUnavailable("service unavailable"))
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			SetProxyHeaders(pr.Out.Header, u)
			// The trace continues with the proxy's span, not the
			// client's (which this server may not have trusted).
			pr.Out.Header.Del("Traceparent")
			pr.Out.Header.Del("Tracestate")
			tracing.Inject(pr.Out.Context(), pr.Out.Header)
		},
		Transport: b,
		// Stream: every write of the backend (a watch event) reaches
		// the client at once.
		FlushInterval: -1,
		ErrorLog:      a.errorLog,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client went away
			}
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" {
				// The backend is gone: the availability controller
				// looks again now, not at its next round.
				a.probeSoon(svc.Name)
			}
			a.cfg.Logger.Info("aggregator: proxying failed", "apiservice", svc.Name, "url", target.String(), "err", err)
			respond.Error(w, r, meta.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: %v", err)))
		},
	}
	ctx, span := tracing.Start(r.Context(), "Proxy", attribute.String("apiservice", svc.Name))
	defer span.End()
	rp.ServeHTTP(w, r.WithContext(ctx))
}

// discoveryURL is where the discovery document of gv is on a backend.
func discoveryURL(base *url.URL, a *APIService) *url.URL {
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/apis/" + a.Spec.Group + "/" + a.Spec.Version
	return &u
}

// probeUser is who the aggregator is when it asks backends for their
// discovery and OpenAPI documents: kube-aggregator's identity.
var probeUser = &authn.User{Name: "system:kube-aggregator", Groups: []string{authn.SystemPrivilegedGroup}}

// get fetches u from a backend as probeUser, with a timeout, and returns
// the body of a 2xx answer.
func (b *backend) get(ctx context.Context, u *url.URL, timeout time.Duration, accept string) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", accept)
	SetProxyHeaders(req.Header, probeUser)
	resp, err := b.transport.RoundTrip(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := readLimited(resp.Body, maxDocumentBytes)
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("reading %s: %w", u, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return body, resp.StatusCode, fmt.Errorf("bad status from %s: %d", u, resp.StatusCode)
	}
	return body, resp.StatusCode, nil
}
