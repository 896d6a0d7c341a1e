package authn

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// RequestHeaderConfig configures the front-proxy authenticator: who the
// proxy is, and which headers carry the user it vouches for.
type RequestHeaderConfig struct {
	// CAs verifies the front proxy's client certificate
	// (--requestheader-client-ca-file).
	CAs CAProvider
	// AllowedNames are the common names the proxy's certificate may have
	// (--requestheader-allowed-names); empty allows any certificate CAs
	// verifies.
	AllowedNames []string
	// UsernameHeaders are read in order; the first non-empty one names
	// the user (--requestheader-username-headers, typically X-Remote-User).
	UsernameHeaders []string
	// UIDHeaders likewise give the user's UID (--requestheader-uid-headers).
	UIDHeaders []string
	// GroupHeaders each add every value they carry to the groups
	// (--requestheader-group-headers, typically X-Remote-Group).
	GroupHeaders []string
	// ExtraHeaderPrefixes start headers whose remainder, lower-cased and
	// URL-unescaped, is a key of the user's extra
	// (--requestheader-extra-headers-prefix, typically X-Remote-Extra-).
	ExtraHeaderPrefixes []string
	// Now is the clock used to verify certificates; nil means time.Now.
	Now func() time.Time
}

// RequestHeader authenticates requests that a front proxy (kube-apiserver's
// aggregator, an authenticating proxy) forwards on behalf of a user it has
// authenticated: the proxy presents a client certificate from its own CA
// and names the user in headers. Only such a request may name a user that
// way: RequestHeader removes the headers from every request it sees,
// trusted or not, so nothing downstream can be fooled by a client that
// sets X-Remote-User itself. Put it first in a Union, so that it sees
// every request.
type RequestHeader struct {
	c            RequestHeaderConfig
	extraPrefixL []string // lower-cased ExtraHeaderPrefixes
	verified     verifyCache
}

// NewRequestHeader checks c and returns the authenticator.
func NewRequestHeader(c RequestHeaderConfig) (*RequestHeader, error) {
	if c.CAs == nil {
		return nil, errors.New("authn: the request-header authenticator needs the front proxy's CA")
	}
	if len(c.UsernameHeaders) == 0 {
		return nil, errors.New("authn: the request-header authenticator needs at least one username header")
	}
	a := &RequestHeader{c: c}
	for _, p := range c.ExtraHeaderPrefixes {
		a.extraPrefixL = append(a.extraPrefixL, strings.ToLower(p))
	}
	return a, nil
}

// AuthenticateRequest implements Authenticator.
func (a *RequestHeader) AuthenticateRequest(r *http.Request) (*Response, bool, error) {
	defer a.StripHeaders(r.Header)
	trusted, err := a.verifyProxy(r)
	if !trusted {
		return nil, false, err
	}
	name := firstValue(r.Header, a.c.UsernameHeaders)
	if name == "" {
		return nil, false, nil
	}
	u := User{
		Name:   name,
		UID:    firstValue(r.Header, a.c.UIDHeaders),
		Groups: allValues(r.Header, a.c.GroupHeaders),
		Extra:  a.extra(r.Header),
	}
	return &Response{User: u}, true, nil
}

// verifyProxy reports whether the request comes from the front proxy: a
// client certificate that CAs verifies for client authentication, with an
// allowed common name. A certificate from another CA is not an error (it
// may be a user's, for the X509 authenticator); a proxy certificate that
// fails verification or has a common name not allowed is.
func (a *RequestHeader) verifyProxy(r *http.Request) (bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return false, nil
	}
	pool := a.c.CAs.ClientCAs()
	if pool == nil {
		return false, nil
	}
	certs := r.TLS.PeerCertificates
	opts := x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if a.c.Now != nil {
		opts.CurrentTime = a.c.Now()
	}
	if err := a.verified.verify(certs, opts); err != nil {
		var unknown x509.UnknownAuthorityError
		if errors.As(err, &unknown) {
			return false, nil
		}
		return false, fmt.Errorf("verifying front proxy certificate: %w", err)
	}
	if len(a.c.AllowedNames) > 0 && !slices.Contains(a.c.AllowedNames, certs[0].Subject.CommonName) {
		return false, fmt.Errorf("front proxy certificate with common name %q is not in --requestheader-allowed-names", certs[0].Subject.CommonName)
	}
	return true, nil
}

// StripHeaders removes every header the front proxy may set from h,
// whatever the case of its name.
func (a *RequestHeader) StripHeaders(h http.Header) {
	for name := range h {
		if a.isProxyHeader(name) {
			delete(h, name)
		}
	}
}

func (a *RequestHeader) isProxyHeader(name string) bool {
	for _, hs := range [][]string{a.c.UsernameHeaders, a.c.UIDHeaders, a.c.GroupHeaders} {
		for _, n := range hs {
			if strings.EqualFold(name, n) {
				return true
			}
		}
	}
	return a.extraPrefix(name) != ""
}

// extraPrefix returns the configured prefix (lower-cased) that header name
// starts with, case-insensitively, or "".
func (a *RequestHeader) extraPrefix(name string) string {
	for _, p := range a.extraPrefixL {
		if len(name) >= len(p) && strings.EqualFold(name[:len(p)], p) {
			return p
		}
	}
	return ""
}

// extra collects the user's extra from the prefixed headers: the key is
// the rest of the header name, lower-cased and URL-unescaped (so that keys
// with characters headers cannot hold, like "/", can travel), as
// kube-apiserver reads it.
func (a *RequestHeader) extra(h http.Header) map[string][]string {
	var extra map[string][]string
	for _, p := range a.extraPrefixL {
		for name, values := range h {
			if len(name) < len(p) || !strings.EqualFold(name[:len(p)], p) {
				continue
			}
			key := UnescapeExtraKey(strings.ToLower(name[len(p):]))
			if extra == nil {
				extra = map[string][]string{}
			}
			extra[key] = append(extra[key], values...)
		}
	}
	return extra
}

// UnescapeExtraKey decodes the %-escapes of an extra key taken from a
// header name (X-Remote-Extra-, Impersonate-Extra-); a key that is not
// validly escaped is used as it is, as in Kubernetes.
func UnescapeExtraKey(encoded string) string {
	key, err := url.PathUnescape(encoded)
	if err != nil {
		return encoded
	}
	return key
}

func firstValue(h http.Header, names []string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

func allValues(h http.Header, names []string) []string {
	var out []string
	for _, n := range names {
		for _, v := range h.Values(n) {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}
