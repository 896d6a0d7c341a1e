package authn

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// CAProvider returns the current pool of client CAs. A provider may change
// its answer over time (a CA file reloaded from disk); authenticators ask it
// on every request.
type CAProvider interface {
	ClientCAs() *x509.CertPool
}

// StaticCAs is a CAProvider that never changes.
type StaticCAs struct{ Pool *x509.CertPool }

// ClientCAs returns the pool.
func (s StaticCAs) ClientCAs() *x509.CertPool { return s.Pool }

// X509 authenticates requests that present a client certificate signed by
// one of the provider's CAs for client authentication: the certificate's
// common name is the user name and its organizations are the groups, as in
// Kubernetes. A chain that verified is remembered (until the CA pool
// changes or a certificate's validity ends), so that the many requests of
// one client cost one verification.
type X509 struct {
	CAs CAProvider
	// Now is the clock used for validity checks; nil means time.Now.
	Now func() time.Time

	verified verifyCache
}

// NewX509 returns an X509 authenticator over cas.
func NewX509(cas CAProvider) *X509 { return &X509{CAs: cas} }

// clientAuthUsages are the key usages a client certificate must allow
// (read-only: x509.Verify does not change them).
var clientAuthUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}

// AuthenticateRequest implements Authenticator.
func (a *X509) AuthenticateRequest(r *http.Request) (*Response, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	pool := a.CAs.ClientCAs()
	if pool == nil {
		return nil, false, nil
	}
	certs := r.TLS.PeerCertificates
	opts := x509.VerifyOptions{Roots: pool, KeyUsages: clientAuthUsages}
	if a.Now != nil {
		opts.CurrentTime = a.Now()
	}
	if err := a.verified.verify(certs, opts); err != nil {
		var unknown x509.UnknownAuthorityError
		if errors.As(err, &unknown) {
			// A certificate from another CA may be meant for another
			// authenticator (the front proxy's, say): not ours to reject.
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("verifying client certificate: %w", err)
	}
	leaf := certs[0]
	if leaf.Subject.CommonName == "" {
		return nil, false, errors.New("client certificate has no common name")
	}
	return &Response{User: User{
		Name:   leaf.Subject.CommonName,
		Groups: append([]string(nil), leaf.Subject.Organization...),
	}}, true, nil
}
