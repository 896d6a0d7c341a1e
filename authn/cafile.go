package authn

import (
	"crypto/x509"
	"errors"
	"time"
)

// CAFile is a CAProvider backed by a PEM bundle on disk that it re-reads
// when the file changes, so that a CA can be added or rotated without a
// restart (kube-apiserver's dynamic --client-ca-file). The file is looked
// at, at most once per ReloadInterval, by the requests that use it; a file
// that goes missing or stops parsing leaves the last good bundle in use.
type CAFile struct {
	src *fileSource[*x509.CertPool]
}

// NewCAFile reads the CA bundle at path; it must hold at least one
// certificate.
func NewCAFile(path string) (*CAFile, error) {
	src, err := newFileSource(path, "CA bundle", parseCABundle)
	if err != nil {
		return nil, err
	}
	return &CAFile{src: src}, nil
}

func parseCABundle(data []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, errors.New("no PEM certificates found")
	}
	return pool, nil
}

// SetReloadInterval changes how often the file is looked at (default
// DefaultReloadInterval).
func (c *CAFile) SetReloadInterval(d time.Duration) { c.src.setInterval(d) }

// ClientCAs implements CAProvider.
func (c *CAFile) ClientCAs() *x509.CertPool { return c.src.get() }

// Reload re-reads the file now; on error the previous bundle stays.
func (c *CAFile) Reload() error { return c.src.reload() }

// Path is the file the bundle is read from.
func (c *CAFile) Path() string { return c.src.path }
