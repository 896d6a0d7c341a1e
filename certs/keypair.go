package certs

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// KeyPairFiles is a certificate and key read from two PEM files and read
// again when either changes, as kube-apiserver reloads --tls-cert-file and
// --proxy-client-cert-file: a rotated certificate is served (or presented)
// from the next handshake on, without a restart. The files are looked at
// lazily, by the handshakes that use them, at most once per second, and
// read only when they look changed (or a minute has passed). A pair
// that does not load (a half-written rotation: the new certificate beside
// the old key) leaves the last good one in place, and is tried again.
type KeyPairFiles struct {
	certPath, keyPath string
	interval          time.Duration
	now               func() time.Time

	cur       atomic.Pointer[tls.Certificate]
	nextCheck atomic.Int64 // UnixNano
	mu        sync.Mutex   // held by the one checking
	// seen is what the files looked like when last read, and readAt
	// when: an unchanged look skips the read, but for a read each
	// minute in case a file system reports changes coarsely.
	seen   [2]os.FileInfo
	readAt time.Time
	// certData and keyData are the pair in use; bad is the content of
	// the files when they last failed to load, and why, so that a bad
	// pair is parsed and logged once, not every second.
	certData, keyData []byte
	bad               struct {
		certData, keyData []byte
		err               error
	}
}

// keyPairCheckInterval is how often KeyPairFiles looks at its files.
const keyPairCheckInterval = time.Second

// NewKeyPairFiles loads the pair; an error here is the caller's to report,
// naming the files.
func NewKeyPairFiles(certPath, keyPath string) (*KeyPairFiles, error) {
	k := &KeyPairFiles{certPath: certPath, keyPath: keyPath, interval: keyPairCheckInterval, now: time.Now}
	k.remember() // before the read, as in check
	certData, keyData, err := k.read()
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certData, keyData)
	if err != nil {
		return nil, err // the caller names the files (its flags)
	}
	k.cur.Store(&cert)
	k.certData, k.keyData = certData, keyData
	k.nextCheck.Store(k.now().Add(k.interval).UnixNano())
	return k, nil
}

func (k *KeyPairFiles) read() (certData, keyData []byte, err error) {
	if certData, err = os.ReadFile(k.certPath); err != nil {
		return nil, nil, err
	}
	if keyData, err = os.ReadFile(k.keyPath); err != nil {
		return nil, nil, err
	}
	return certData, keyData, nil
}

// Current returns the pair in use, first looking at the files if it is time.
func (k *KeyPairFiles) Current() *tls.Certificate {
	now := k.now()
	if now.UnixNano() >= k.nextCheck.Load() && k.mu.TryLock() {
		if now.UnixNano() >= k.nextCheck.Load() && !k.unchanged() {
			_ = k.check()
			k.nextCheck.Store(now.Add(k.interval).UnixNano())
		}
		k.mu.Unlock()
	}
	return k.cur.Load()
}

// Reload reads the files now and reports why the pair in use was kept, if
// it was.
func (k *KeyPairFiles) Reload() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.check()
}

// rereadEvery forces a read now and then even when the files look
// unchanged.
const rereadEvery = time.Minute

// unchanged reports whether both files look as when last read.
func (k *KeyPairFiles) unchanged() bool {
	for i, path := range [2]string{k.certPath, k.keyPath} {
		info, err := os.Stat(path)
		if err != nil || k.seen[i] == nil || !os.SameFile(info, k.seen[i]) ||
			info.Size() != k.seen[i].Size() || !info.ModTime().Equal(k.seen[i].ModTime()) {
			return false
		}
	}
	return k.now().Sub(k.readAt) < rereadEvery
}

// remember records what the files look like now, as just read.
func (k *KeyPairFiles) remember() {
	for i, path := range [2]string{k.certPath, k.keyPath} {
		k.seen[i], _ = os.Stat(path)
	}
	k.readAt = k.now()
}

// check reloads the pair if the files hold another one; k.mu is held.
// Reload forces the read; the lazy check skips it while the files look
// unchanged.
func (k *KeyPairFiles) check() error {
	k.remember() // before the read: a change during it is seen next time
	certData, keyData, err := k.read()
	if err != nil {
		return k.keep(nil, nil, fmt.Errorf("reading the key pair: %w", err))
	}
	if bytes.Equal(certData, k.certData) && bytes.Equal(keyData, k.keyData) {
		k.bad.err = nil
		return nil
	}
	if k.bad.err != nil && bytes.Equal(certData, k.bad.certData) && bytes.Equal(keyData, k.bad.keyData) {
		return k.bad.err
	}
	cert, err := tls.X509KeyPair(certData, keyData)
	if err != nil {
		return k.keep(certData, keyData, fmt.Errorf("loading %s and %s: %w", k.certPath, k.keyPath, err))
	}
	k.cur.Store(&cert)
	k.certData, k.keyData, k.bad.err = certData, keyData, nil
	slog.Info("reloaded a certificate and key", "cert", k.certPath, "key", k.keyPath)
	return nil
}

// keep leaves the pair in use after the files failed to load, logging
// each new failure once.
func (k *KeyPairFiles) keep(certData, keyData []byte, err error) error {
	if k.bad.err == nil || err.Error() != k.bad.err.Error() {
		slog.Warn("keeping the previous certificate and key", "cert", k.certPath, "key", k.keyPath, "err", err)
	}
	k.bad.certData, k.bad.keyData, k.bad.err = certData, keyData, err
	return err
}

// GetCertificate serves the current pair: tls.Config.GetCertificate.
func (k *KeyPairFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return k.Current(), nil
}

// GetClientCertificate presents the current pair:
// tls.Config.GetClientCertificate.
func (k *KeyPairFiles) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return k.Current(), nil
}
