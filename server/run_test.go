package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/server"
)

// blockingAdmission holds creates of objects named "slow" until released.
type blockingAdmission struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingAdmission) Handles(op admission.Operation) bool { return op == admission.Create }

func (b *blockingAdmission) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Name != "slow" {
		return nil
	}
	close(b.entered)
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serving starts s with Run on a loopback listener and returns a client
// for it and Run's result.
func serving(t *testing.T, s *server.GenericServer, cfg *server.Config, ctx context.Context) (*http.Client, string, <-chan error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.PrepareRun().Run(ctx) }()
	pool := x509.NewCertPool()
	pool.AddCert(cfg.SecureServing.Certificate.Leaf)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(client.CloseIdleConnections)
	return client, "https://" + cfg.SecureServing.Listener.Addr().String(), done
}

// tlsConfig gives cfg a loopback listener and a certificate for it.
func tlsConfig(t *testing.T, cfg *server.Config) {
	t.Helper()
	ca, err := certs.NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.IssueServing([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pair.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			t.Fatal(err)
		}
	}
	cfg.SecureServing.Certificate = &cert
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.SecureServing.Listener = ln
}

func fetch(t *testing.T, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// eventually polls cond every few milliseconds until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRunGracefulShutdown(t *testing.T) {
	block := &blockingAdmission{entered: make(chan struct{}), release: make(chan struct{})}
	var cfg *server.Config
	hookStarted, hookStopped := make(chan struct{}), make(chan struct{})
	var preShutdown atomic.Int32
	s := newServer(t, "test", server.NewEmptyDelegate(), func(c *server.Config) {
		tlsConfig(t, c)
		c.Admission = admission.Chain{block}
		// Long enough to see /readyz fail before the listener closes.
		c.ShutdownDelayDuration = 300 * time.Millisecond
		cfg = c
	})
	if err := s.InstallAPIGroup(widgetGroup(t, "test.example.com")); err != nil {
		t.Fatal(err)
	}
	hookRelease := make(chan struct{})
	if err := s.AddPostStartHook("warm-cache", func(ctx context.Context) error {
		close(hookStarted)
		<-hookRelease
		go func() {
			<-ctx.Done() // work a hook starts stops at shutdown
			close(hookStopped)
		}()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddPostStartHook("warm-cache", func(context.Context) error { return nil }); err == nil {
		t.Error("a post-start hook registered twice")
	}
	if err := s.AddPreShutdownHook("flush", func() error { preShutdown.Add(1); return errors.New("logged, not fatal") }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, base, done := serving(t, s, cfg, ctx)

	// Until the hook finishes, readyz reports it.
	<-hookStarted
	eventually(t, "readyz to name the pending hook", func() bool {
		code, body := fetch(t, client, "GET", base+"/readyz?verbose", "")
		return code == 500 && strings.Contains(body, "[-]poststarthook/warm-cache failed: reason withheld\n")
	})
	if code, body := fetch(t, client, "GET", base+"/readyz/poststarthook/warm-cache", ""); code != 500 || body != "internal server error: not finished\n" {
		t.Errorf("readyz/poststarthook/warm-cache: %d %q", code, body)
	}
	if err := s.AddPostStartHook("late", func(context.Context) error { return nil }); err == nil {
		t.Error("a post-start hook added after the start")
	}
	close(hookRelease)
	eventually(t, "readyz to pass", func() bool {
		code, body := fetch(t, client, "GET", base+"/readyz?verbose", "")
		return code == 200 && strings.Contains(body, "[+]poststarthook/warm-cache ok\n")
	})
	if code, body := fetch(t, client, "GET", base+"/healthz?verbose", ""); code != 200 || !strings.Contains(body, "poststarthook/warm-cache ok") {
		t.Errorf("healthz %d %s", code, body)
	}

	// A watch and a slow write are in flight when shutdown begins.
	wreq, _ := http.NewRequest("GET", base+"/apis/test.example.com/v1/namespaces/ns/widgets?watch=true", nil)
	wresp, err := client.Do(wreq)
	if err != nil || wresp.StatusCode != 200 {
		t.Fatalf("watch: %v %v", err, wresp)
	}
	defer wresp.Body.Close()
	slow := make(chan string, 1)
	go func() {
		code, body := fetch(t, client, "POST", base+"/apis/test.example.com/v1/namespaces/ns/widgets", `{"metadata":{"name":"slow"}}`)
		slow <- strings.Join([]string{http.StatusText(code), body}, " ")
	}()
	<-block.entered

	cancel()
	eventually(t, "readyz to fail", func() bool {
		code, body := fetch(t, client, "GET", base+"/readyz?verbose", "")
		return code == 500 && strings.Contains(body, "[-]shutdown failed: reason withheld\n")
	})
	if code, _ := fetch(t, client, "GET", base+"/livez", ""); code != 200 {
		t.Errorf("livez during shutdown: %d; only readiness fails", code)
	}
	// The watch ends cleanly (end of stream, not a cut connection).
	rest, err := io.ReadAll(bufio.NewReader(wresp.Body))
	if err != nil || len(rest) != 0 {
		t.Errorf("watch ended with %v after %q", err, rest)
	}
	// The in-flight request completes.
	select {
	case <-done:
		t.Fatal("Run returned with a request in flight")
	default:
	}
	close(block.release)
	if got := <-slow; !strings.HasPrefix(got, "Created ") {
		t.Errorf("in-flight create: %s", got)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if preShutdown.Load() != 1 {
		t.Errorf("pre-shutdown hook ran %d times", preShutdown.Load())
	}
	select {
	case <-hookStopped:
	case <-time.After(10 * time.Second):
		t.Error("the post-start hook's context did not end")
	}
	if _, err := net.DialTimeout("tcp", cfg.SecureServing.Listener.Addr().String(), time.Second); err == nil {
		t.Error("still listening after Run returned")
	}
}

func TestRunFailingHook(t *testing.T) {
	var cfg *server.Config
	s := newServer(t, "test", server.NewEmptyDelegate(), func(c *server.Config) { tlsConfig(t, c); cfg = c })
	if err := s.AddPostStartHook("broken", func(context.Context) error { return errors.New("no luck") }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	client, base, done := serving(t, s, cfg, ctx)
	eventually(t, "readyz to report the hook's error", func() bool {
		code, body := fetch(t, client, "GET", base+"/readyz/poststarthook/broken", "")
		return code == 500 && body == "internal server error: no luck\n"
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestRunListenError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := newServer(t, "test", server.NewEmptyDelegate(), func(c *server.Config) {
		tlsConfig(t, c)
		c.SecureServing.Listener.Close()
		c.SecureServing.Listener = nil
		c.SecureServing.BindAddress = "127.0.0.1"
		c.SecureServing.Port = ln.Addr().(*net.TCPAddr).Port // taken
	})
	err = s.PrepareRun().Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "listening on 127.0.0.1:") {
		t.Errorf("Run on a taken port: %v", err)
	}
}
