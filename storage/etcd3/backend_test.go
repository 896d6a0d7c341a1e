package etcd3

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/storage"
)

// TestBackend covers what is particular to etcd: the key prefix, the
// compactor and Dial. The subtests share one etcd.
func TestBackend(t *testing.T) {
	eps := etcdtest.Start(t)
	client := newClient(t, eps)
	t.Run("prefix is applied transparently", func(t *testing.T) { testPrefix(t, client) })
	t.Run("compaction rounds coordinate through compact_rev_key", func(t *testing.T) { testCompactRounds(t, client) })
	t.Run("RunCompactor compacts and stops with its context", func(t *testing.T) { testRunCompactor(t, client) })
	t.Run("Dial", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		c, err := Dial(ctx, Config{Endpoints: eps, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		defer c.Close()
		if _, err := New(c).CurrentRevision(ctx); err != nil {
			t.Fatalf("CurrentRevision: %v", err)
		}
	})
}

func testPrefix(t *testing.T, client *clientv3.Client) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	s := New(client, WithPrefix("registry/"))
	defer s.Close()
	const key = "/wardle.example.com/flunders/ns/a"
	rev, err := s.Create(ctx, key, []byte(`{"a":1}`))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	raw, err := client.Get(ctx, "/registry"+key)
	if err != nil || len(raw.Kvs) != 1 || string(raw.Kvs[0].Value) != `{"a":1}` || raw.Kvs[0].ModRevision != rev {
		t.Fatalf("raw etcd read of /registry%s = %v, %v; want the value as given", key, raw, err)
	}
	l, err := s.List(ctx, "/wardle.example.com/flunders/", storage.ListOptions{Limit: 10})
	if err != nil || len(l.Items) != 1 || l.Items[0].Key != key {
		t.Fatalf("List = %+v, %v; want the one key, without the prefix", l, err)
	}
	w, err := s.Watch(ctx, "/wardle.example.com/flunders/", storage.WatchOptions{Revision: rev - 1})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()
	if ev := <-w.ResultChan(); ev.Type != storage.Added || ev.Key != key {
		t.Fatalf("watch event %+v; want ADDED %s", ev, key)
	}
	other := New(client, WithPrefix("/other"))
	if _, err := other.Get(ctx, key, storage.GetOptions{}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get under another prefix: %v; want NotFound", err)
	}
	if kv, err := New(client).Get(ctx, "/registry"+key, storage.GetOptions{}); err != nil || kv.Revision != rev {
		t.Fatalf("Get without a prefix = %+v, %v", kv, err)
	}
}

func compacted(ctx context.Context, client *clientv3.Client, rev int64) bool {
	_, err := client.Get(ctx, "/any", clientv3.WithRev(rev))
	return errors.Is(err, rpctypes.ErrCompacted)
}

func testCompactRounds(t *testing.T, client *clientv3.Client) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := client.Delete(ctx, compactRevKey); err != nil {
		t.Fatal(err)
	}
	// Two servers, A and B, run their rounds against one etcd.
	va, ra, err := compact(ctx, client, 0, 0)
	if err != nil || va != 1 {
		t.Fatalf("A's first round = version %d, %v; want 1", va, err)
	}
	if _, err := client.Put(ctx, "/compact/x", "1"); err != nil {
		t.Fatal(err)
	}
	vb, rb, err := compact(ctx, client, 0, 0)
	if err != nil || vb != 1 || rb <= ra {
		t.Fatalf("B's first round = version %d rev %d, %v; want to adopt version 1 at a revision after %d", vb, rb, err, ra)
	}
	if compacted(ctx, client, ra-1) {
		t.Fatal("a first round compacted")
	}
	if va, _, err = compact(ctx, client, va, ra); err != nil || va != 2 {
		t.Fatalf("A's second round = version %d, %v; want 2", va, err)
	}
	if !compacted(ctx, client, ra-1) {
		t.Fatalf("A's second round did not compact to %d", ra)
	}
	if vb, _, err = compact(ctx, client, vb, rb); err != nil || vb != 2 {
		t.Fatalf("B's second round = version %d, %v; want to adopt 2", vb, err)
	}
	if compacted(ctx, client, rb-1) {
		t.Fatalf("B compacted to %d in the round A had already done", rb)
	}
}

func testRunCompactor(t *testing.T, client *clientv3.Client) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	put, err := client.Put(ctx, "/compactor/x", "1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx, "/compactor/x", "2"); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunCompactor(rctx, client, 200*time.Millisecond)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !compacted(ctx, client, put.Header.Revision) {
		if time.Now().After(deadline) {
			stop()
			<-done
			t.Fatalf("revision %d not compacted after 10s", put.Header.Revision)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("RunCompactor still runs after its context ended")
	}
}

// TestUnreachable checks that a cluster that does not answer is
// ErrUnavailable, and a caller that gives up gets its context's error.
func TestUnreachable(t *testing.T) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}, Logger: ZapLogger(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := New(c)
	update := func(storage.KeyValue) ([]byte, error) { return []byte("x"), nil }
	for _, tc := range []struct {
		name string
		op   func(ctx context.Context) error
	}{
		{"Create", func(ctx context.Context) error { _, err := s.Create(ctx, "/a", []byte("x")); return err }},
		{"Get", func(ctx context.Context) error { _, err := s.Get(ctx, "/a", storage.GetOptions{}); return err }},
		{"GuaranteedUpdate", func(ctx context.Context) error {
			_, err := s.GuaranteedUpdate(ctx, "/a", storage.UpdateOptions{IgnoreNotFound: true}, update)
			return err
		}},
		{"Delete", func(ctx context.Context) error { _, err := s.Delete(ctx, "/a", storage.DeleteOptions{}); return err }},
		{"List", func(ctx context.Context) error { _, err := s.List(ctx, "/", storage.ListOptions{Limit: 5}); return err }},
		{"CurrentRevision", func(ctx context.Context) error { _, err := s.CurrentRevision(ctx); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := tc.op(ctx)
			if !errors.Is(err, storage.ErrUnavailable) {
				t.Fatalf("got %v; want ErrUnavailable", err)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v does not say the deadline passed", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("returned after %v; the context ended after 300ms", d)
			}
			cctx, ccancel := context.WithCancel(t.Context())
			ccancel()
			if err := tc.op(cctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("with a canceled context: %v; want context.Canceled", err)
			}
		})
	}
	t.Run("Dial", func(t *testing.T) {
		start := time.Now()
		_, err := Dial(t.Context(), Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: 500 * time.Millisecond})
		if !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("Dial: %v; want ErrUnavailable", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("Dial took %v with a 500ms timeout", d)
		}
	})
}

func TestTLSConfig(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := writeCert(t, dir, "ca", nil, nil)
	writeCert(t, dir, "client", ca, caKey)
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{name: "no files", cfg: Config{}},
		{name: "CA and client pair", cfg: Config{CAFile: p("ca.crt"), CertFile: p("client.crt"), KeyFile: p("client.key")}},
		{name: "missing CA", cfg: Config{CAFile: p("nope.crt")}, wantErr: "CA file"},
		{name: "CA is not PEM", cfg: Config{CAFile: p("client.key.txt")}, wantErr: "no PEM certificate"},
		{name: "cert without key", cfg: Config{CertFile: p("client.crt")}, wantErr: "together"},
		{name: "key does not match", cfg: Config{CertFile: p("client.crt"), KeyFile: p("ca.key")}, wantErr: "client certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(p("client.key.txt"), []byte("not pem"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := tc.cfg.TLSConfig()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("TLSConfig: %v; want an error about %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("TLSConfig: %v", err)
			}
			if tc.cfg.CAFile == "" {
				if cfg != nil {
					t.Fatalf("TLSConfig = %+v; want nil without files", cfg)
				}
				return
			}
			if cfg.RootCAs == nil || len(cfg.Certificates) != 1 {
				t.Fatalf("TLSConfig = %+v; want the CA pool and one client certificate", cfg)
			}
		})
	}
}

// writeCert writes name.crt and name.key, signed by parent (self-signed
// when nil).
func writeCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	} else {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(name+".crt", "CERTIFICATE", der)
	write(name+".key", "EC PRIVATE KEY", keyDER)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func TestZapLogger(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	z := ZapLogger(l, slog.LevelInfo).Named("etcd-client").With(zap.String("member", "m1"))
	z.Debug("hidden")
	z.Info("visible", zap.Int("n", 3))
	z.Warn("warned")
	out := buf.String()
	for _, want := range []string{"msg=visible", "n=3", "member=m1", "logger=etcd-client", "level=WARN msg=warned"} {
		if !strings.Contains(out, want) {
			t.Errorf("log output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hidden") {
		t.Errorf("a debug entry passed an info level:\n%s", out)
	}
	ZapLogger(nil, nil).Error("discarded") // must not panic
}

// TestDialTLS dials an etcd that requires TLS client certificates, the way
// a production cluster is set up.
func TestDialTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := writeCert(t, dir, "ca", nil, nil)
	writeCert(t, dir, "server", ca, caKey)
	writeCert(t, dir, "client", ca, caKey)
	p := func(name string) string { return filepath.Join(dir, name) }

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "data")
	peer, _ := url.Parse("http://127.0.0.1:0")
	client, _ := url.Parse("https://" + addr)
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ClientTLSInfo = transport.TLSInfo{CertFile: p("server.crt"), KeyFile: p("server.key"), TrustedCAFile: p("ca.crt"), ClientCertAuth: true}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(ZapLogger(nil, nil))
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(20 * time.Second):
		t.Fatal("etcd not ready")
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{Endpoints: []string{"https://" + addr}, CAFile: p("ca.crt"), CertFile: p("client.crt"), KeyFile: p("client.key"), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Dial with the client certificate: %v", err)
	}
	defer c.Close()
	if _, err := New(c).Create(ctx, "/tls", []byte("ok")); err != nil {
		t.Fatalf("Create over TLS: %v", err)
	}

	// Without a client certificate the server refuses.
	if c, err := Dial(ctx, Config{Endpoints: []string{"https://" + addr}, CAFile: p("ca.crt"), DialTimeout: time.Second}); err == nil {
		c.Close()
		t.Fatal("Dial without a client certificate succeeded")
	}
}
