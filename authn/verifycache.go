package authn

import (
	"crypto/sha256"
	"crypto/x509"
	"slices"
	"sync"
	"time"
)

// verifyCache remembers which client certificate chains verified against
// which CA pool, so that a client sending many requests over one
// connection (or many connections) pays for chain verification once, not
// per request: certificates are immutable, and a verified chain stays
// valid while the pool is the same (a reloaded CA file is a new pool) and
// the time is within every certificate's validity.
type verifyCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]verified
	// keys remembers the key of the chains seen last by their leaf: the
	// requests of one connection share its certificates (net/http and
	// HTTP/2 give them all the connection's TLS state), so that they
	// skip hashing the chain too. Small: it holds the certificates.
	keys map[*x509.Certificate]chainKey
}

// chainKey is the key of the chain certs.
type chainKey struct {
	certs []*x509.Certificate
	key   [sha256.Size]byte
}

// chainKeysSize bounds verifyCache.keys: past it, it is emptied.
const chainKeysSize = 64

type verified struct {
	pool      *x509.CertPool
	notBefore time.Time // the latest NotBefore of the chain
	notAfter  time.Time // the earliest NotAfter
}

// verifyCacheSize bounds the cache: past it, it is emptied.
const verifyCacheSize = 4096

// chainHash is the key of the chain certs: the SHA-256 of its
// certificates' SHA-256s.
func chainHash(certs []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	for _, cert := range certs {
		sum := sha256.Sum256(cert.Raw)
		h.Write(sum[:])
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// verify verifies certs[0] with opts (Roots set, Intermediates from
// certs[1:]) unless the same chain verified against the same pool before
// and the time is within its validity.
func (c *verifyCache) verify(certs []*x509.Certificate, opts x509.VerifyOptions) error {
	now := opts.CurrentTime
	if now.IsZero() {
		now = time.Now()
	}
	var (
		e  verified
		ok bool
	)
	c.mu.Lock()
	ck, known := c.keys[certs[0]]
	known = known && slices.Equal(ck.certs, certs)
	if known {
		e, ok = c.entries[ck.key]
	}
	c.mu.Unlock()
	key := ck.key
	if !known {
		key = chainHash(certs)
		c.mu.Lock()
		if c.keys == nil || len(c.keys) >= chainKeysSize {
			c.keys = map[*x509.Certificate]chainKey{}
		}
		c.keys[certs[0]] = chainKey{certs: slices.Clone(certs), key: key}
		e, ok = c.entries[key]
		c.mu.Unlock()
	}
	if ok && e.pool == opts.Roots && !now.Before(e.notBefore) && !now.After(e.notAfter) {
		return nil
	}
	opts.Intermediates = x509.NewCertPool()
	for _, cert := range certs[1:] {
		opts.Intermediates.AddCert(cert)
	}
	chains, err := certs[0].Verify(opts)
	if err != nil {
		return err
	}
	e = verified{pool: opts.Roots, notBefore: certs[0].NotBefore, notAfter: certs[0].NotAfter}
	for _, cert := range chains[0] {
		if cert.NotBefore.After(e.notBefore) {
			e.notBefore = cert.NotBefore
		}
		if cert.NotAfter.Before(e.notAfter) {
			e.notAfter = cert.NotAfter
		}
	}
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= verifyCacheSize {
		c.entries = map[[sha256.Size]byte]verified{}
	}
	c.entries[key] = e
	c.mu.Unlock()
	return nil
}
