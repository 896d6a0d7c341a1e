package authn_test

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/internal/race"
	"github.com/apikit-dev/apikit/internal/testlog"
)

func TestX509(t *testing.T) {
	ca, other := newCA(t, "client-ca"), newCA(t, "other-ca")
	a := authn.NewX509(authn.StaticCAs{Pool: mustPool(t, ca.CertPEM)})

	for _, tc := range []struct {
		name       string
		chain      []*x509.Certificate
		wantUser   string
		wantGroups []string
		wantErr    string // "" with wantUser "" means not ours
	}{
		{name: "valid", chain: []*x509.Certificate{clientCert(t, ca, "alice", "dev", "qa")}, wantUser: "alice", wantGroups: []string{"dev", "qa"}},
		{name: "no certificate", chain: nil},
		{name: "unknown CA is another authenticator's business", chain: []*x509.Certificate{clientCert(t, other, "mallory", "system:masters")}},
		{name: "expired", chain: []*x509.Certificate{leaf(t, ca, &x509.Certificate{Subject: pkix.Name{CommonName: "old"},
			NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(-time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})}, wantErr: "expired"},
		{name: "not yet valid", chain: []*x509.Certificate{leaf(t, ca, &x509.Certificate{Subject: pkix.Name{CommonName: "future"},
			NotBefore: time.Now().Add(time.Hour), NotAfter: time.Now().Add(2 * time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})}, wantErr: "not yet valid"},
		{name: "a serving certificate is no client certificate", chain: []*x509.Certificate{leaf(t, ca, &x509.Certificate{
			Subject: pkix.Name{CommonName: "server"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})},
			wantErr: "incompatible key usage"},
		{name: "no common name", chain: []*x509.Certificate{leaf(t, ca, &x509.Certificate{Subject: pkix.Name{Organization: []string{"dev"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})}, wantErr: "no common name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, ok, err := a.AuthenticateRequest(tlsRequest(tc.chain...))
			switch {
			case tc.wantErr != "":
				if ok || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got ok=%v err=%v, want an error containing %q", ok, err, tc.wantErr)
				}
			case tc.wantUser == "":
				if ok || err != nil {
					t.Fatalf("got ok=%v err=%v, want not authenticated and no error", ok, err)
				}
			default:
				// Organizations are a DER SET, which has an order of its own.
				if !ok || err != nil || resp.User.Name != tc.wantUser || !slices.Equal(slices.Sorted(slices.Values(resp.User.Groups)), tc.wantGroups) {
					t.Fatalf("got %+v ok=%v err=%v, want %s %v", resp, ok, err, tc.wantUser, tc.wantGroups)
				}
			}
		})
	}

	t.Run("chain through an intermediate", func(t *testing.T) {
		inter, err := certs.NewCA("intermediate", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		// The intermediate's certificate, signed by the root.
		signed := &certs.CA{Cert: reSign(t, ca, inter), Key: inter.Key}
		user := clientCert(t, signed, "bob", "ops")
		resp, ok, err := a.AuthenticateRequest(tlsRequest(user, signed.Cert))
		if !ok || err != nil || resp.User.Name != "bob" {
			t.Fatalf("got %+v %v %v", resp, ok, err)
		}
		if _, ok, _ := a.AuthenticateRequest(tlsRequest(user)); ok {
			t.Error("authenticated without the intermediate")
		}
	})
}

// reSign returns inter's certificate (same key and subject) signed by ca.
func reSign(t *testing.T, ca, inter *certs.CA) *x509.Certificate {
	t.Helper()
	tmpl := *inter.Cert
	tmpl.AuthorityKeyId = nil
	der, err := x509.CreateCertificate(randReader{}, &tmpl, ca.Cert, inter.Key.Public(), ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustPool(t *testing.T, pemBytes []byte) *x509.CertPool {
	t.Helper()
	p, err := certs.PoolFromPEM(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCAFileReload rotates the client CA on disk while requests keep
// coming: the new CA is honoured without a restart, a broken file leaves
// the last good one in place.
func TestCAFileReload(t *testing.T) {
	logs := testlog.Capture(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "client-ca.crt")
	oldCA, newCAx := newCA(t, "old"), newCA(t, "new")
	writeFile(t, path, oldCA.CertPEM)
	cas, err := authn.NewCAFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cas.SetReloadInterval(10 * time.Millisecond)
	a := authn.NewX509(cas)
	oldUser, newUser := clientCert(t, oldCA, "old-user"), clientCert(t, newCAx, "new-user")
	authenticated := func(c *x509.Certificate) bool {
		_, ok, _ := a.AuthenticateRequest(tlsRequest(c))
		return ok
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("not within 5s: %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if !authenticated(oldUser) || authenticated(newUser) {
		t.Fatal("initial CA not in force")
	}

	replaceFile(t, path, newCAx.CertPEM)
	eventually("the new CA replaces the old", func() bool { return authenticated(newUser) && !authenticated(oldUser) })

	// Both at once: a bundle.
	writeFile(t, path, append(append([]byte{}, oldCA.CertPEM...), newCAx.CertPEM...))
	eventually("a bundle of both", func() bool { return authenticated(newUser) && authenticated(oldUser) })

	// A broken file keeps the bundle in force, and says so once.
	writeFile(t, path, []byte("not a certificate"))
	if err := cas.Reload(); err == nil || !strings.Contains(err.Error(), "no PEM certificates") {
		t.Fatalf("Reload of a broken file: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	if !authenticated(newUser) || !authenticated(oldUser) {
		t.Error("a broken file replaced the CAs")
	}
	if n := strings.Count(logs.String(), "keeping the previous CA bundle"); n != 1 {
		t.Errorf("logged the broken file %d times, want once:\n%s", n, logs)
	}
	// A removed file too.
	if err := removeFile(path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if !authenticated(newUser) {
		t.Error("a removed file dropped the CAs")
	}
	writeFile(t, path, newCAx.CertPEM)
	eventually("the file back", func() bool { return authenticated(newUser) && !authenticated(oldUser) })

	if _, err := authn.NewCAFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("NewCAFile of a missing file")
	}
}

// TestX509VerificationCache shows that remembering verified chains changes
// no answer: a chain that expires, or whose CA is replaced, is refused.
func TestX509VerificationCache(t *testing.T) {
	ca := newCA(t, "client-ca")
	now := time.Now()
	cert := leaf(t, ca, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	a := authn.NewX509(authn.StaticCAs{Pool: mustPool(t, ca.CertPEM)})
	a.Now = func() time.Time { return now }
	for range 3 {
		if _, ok, err := a.AuthenticateRequest(tlsRequest(cert)); !ok || err != nil {
			t.Fatalf("valid: %v %v", ok, err)
		}
	}
	a.Now = func() time.Time { return now.Add(2 * time.Hour) }
	if _, ok, err := a.AuthenticateRequest(tlsRequest(cert)); ok || err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("after expiry: %v %v", ok, err)
	}
	a.Now = func() time.Time { return now }
	a.CAs = authn.StaticCAs{Pool: mustPool(t, newCA(t, "replacement").CertPEM)}
	if _, ok, _ := a.AuthenticateRequest(tlsRequest(cert)); ok {
		t.Error("a chain verified against the old CA passed the new one")
	}
}

// TestX509ChainOfAConnection: the requests of one connection share its
// certificate slice, whose chain is hashed once; a slice whose
// certificates differ from the ones hashed, the leaf the same, is hashed
// anew, so that no chain passes on another's verification.
func TestX509ChainOfAConnection(t *testing.T) {
	ca := newCA(t, "client-ca")
	a := authn.NewX509(authn.StaticCAs{Pool: mustPool(t, ca.CertPEM)})
	inter, err := certs.NewCA("intermediate", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	signed := &certs.CA{Cert: reSign(t, ca, inter), Key: inter.Key}
	user := clientCert(t, signed, "bob", "ops")
	r := tlsRequest(user, signed.Cert)
	for range 3 {
		if resp, ok, err := a.AuthenticateRequest(r); !ok || err != nil || resp.User.Name != "bob" {
			t.Fatalf("got %+v %v %v", resp, ok, err)
		}
	}
	// The same slice, its intermediate replaced by an unrelated CA's.
	r.TLS.PeerCertificates[1] = newCA(t, "stranger").Cert
	if _, ok, _ := a.AuthenticateRequest(r); ok {
		t.Error("authenticated through an intermediate that did not sign the leaf")
	}
}

// TestX509Allocations: a request of a connection whose chain verified
// allocates its user only (the response and its groups), not the chain's
// hash nor the key usages (three allocations before).
func TestX509Allocations(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates on its own")
	}
	ca := newCA(t, "client-ca")
	a := authn.NewX509(authn.StaticCAs{Pool: mustPool(t, ca.CertPEM)})
	r := tlsRequest(clientCert(t, ca, "alice", "dev"))
	if _, ok, err := a.AuthenticateRequest(r); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if allocs := testing.AllocsPerRun(200, func() { _, _, _ = a.AuthenticateRequest(r) }); allocs > 2 {
		t.Errorf("%v allocations per request, want at most 2", allocs)
	}
}
