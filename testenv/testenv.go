package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/options"
	"github.com/apikit-dev/apikit/server"
)

// readyTimeout bounds how long Start waits for /readyz: generous, for
// loaded CI machines.
const readyTimeout = 60 * time.Second

// Env is a running server and how to reach it as an administrator (the
// user admin in system:masters, whom every authorizer allows).
type Env struct {
	// Server is the server build returned, serving.
	Server *server.GenericServer
	// Options are the completed options the server was built from (the
	// storage, the CA, the token generator...).
	Options *options.ServerRunOptions
	// Host is the server's URL, https://127.0.0.1:<port>: rest.Config.Host.
	Host string
	// CAData verifies the server's certificate; CertData and KeyData are
	// the admin's client certificate and key, all PEM: the fields of the
	// same names of rest.Config.TLSClientConfig.
	CAData, CertData, KeyData []byte
	// Kubeconfig is the path of a kubeconfig file for the admin:
	// clientcmd.BuildConfigFromFlags("", env.Kubeconfig), or KUBECONFIG
	// for kubectl.
	Kubeconfig string
}

// Option changes how Start configures the server.
type Option func(*settings)

type settings struct {
	args      []string
	configure []func(*options.ServerRunOptions)
}

// Flags adds kube-apiserver flags (as the server's command takes them),
// parsed after testenv's own, so they win.
func Flags(args ...string) Option {
	return func(s *settings) { s.args = append(s.args, args...) }
}

// Configure changes the options after the flags are parsed and before
// they are completed: what no flag says, such as extra bootstrap RBAC
// roles.
func Configure(f func(*options.ServerRunOptions)) Option {
	return func(s *settings) { s.configure = append(s.configure, f) }
}

// Start starts a server named "apikit-test" with build (as
// options.NewServerCommand runs it), on kube-apiserver's defaults and
// testenv's: --storage-backend=memory, --bind-address=127.0.0.1,
// --secure-port=0 (a free port) and a data directory from tb.TempDir. It
// waits until /readyz answers 200, and stops the server when the test
// ends. It fails the test if the server cannot start.
func Start(tb testing.TB, build options.BuildFunc, opts ...Option) *Env {
	tb.Helper()
	var s settings
	for _, o := range opts {
		o(&s)
	}
	env, stop, err := start(build, tb.TempDir(), s)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	tb.Cleanup(func() {
		if err := stop(); err != nil {
			tb.Errorf("testenv: stopping the server: %v", err)
		}
	})
	return env
}

// start is Start without the testing.TB: stop ends the server and waits
// for it.
func start(build options.BuildFunc, dir string, s settings) (_ *Env, stop func() error, err error) {
	o := options.NewServerRunOptions()
	o.Logger = slog.New(slog.DiscardHandler)
	fs := pflag.NewFlagSet("testenv", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, section := range o.Flags().FlagSets {
		fs.AddFlagSet(section)
	}
	base := []string{"--storage-backend=memory", "--bind-address=127.0.0.1", "--secure-port=0", "--data-dir=" + dir}
	if err := fs.Parse(append(base, s.args...)); err != nil {
		return nil, nil, fmt.Errorf("flags: %w", err)
	}
	for _, f := range s.configure {
		f(o)
	}
	completed, err := o.Complete()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	closeStorage := func() error { return o.Etcd.Storage.Close() }
	srv, err := completed.NewServer(ctx, "apikit-test", build)
	if err != nil {
		cancel()
		return nil, nil, errors.Join(err, closeStorage())
	}
	done := make(chan error, 1)
	go func() { done <- srv.PrepareRun().Run(ctx) }()
	stop = func() error {
		cancel()
		return errors.Join(<-done, closeStorage())
	}
	env, err := newEnv(srv, o)
	if err == nil {
		err = env.waitReady(done)
	}
	if err != nil {
		return nil, nil, errors.Join(err, stop())
	}
	return env, stop, nil
}

// newEnv issues the admin's certificate from the development PKI's CA.
func newEnv(srv *server.GenericServer, o *options.ServerRunOptions) (*Env, error) {
	ss := o.SecureServing
	if ss.CA == nil || ss.AdminKubeconfig == "" {
		return nil, errors.New("no development PKI: do not pass --tls-cert-file or --client-ca-file")
	}
	ln := ss.Listener
	if ln == nil {
		return nil, errors.New("the server has no listener")
	}
	env := &Env{Server: srv, Options: o, Host: "https://" + ln.Addr().String(), CAData: ss.CA.CertPEM, Kubeconfig: ss.AdminKubeconfig}
	admin, err := ss.CA.IssueClient("admin", []string{"system:masters"}, 24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}
	env.CertData, env.KeyData = admin.CertPEM, admin.KeyPEM
	return env, nil
}

// waitReady polls /readyz until it answers 200, the server ends, or
// readyTimeout passes.
func (e *Env) waitReady(done <-chan error) error {
	client, err := e.HTTPClient()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := client.Get(e.Host + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-done:
			return fmt.Errorf("the server ended before it was ready: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %v", readyTimeout, err)
		}
	}
}

// TLSConfig returns a TLS configuration that trusts the server and
// presents the admin's certificate.
func (e *Env) TLSConfig() (*tls.Config, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(e.CAData) {
		return nil, errors.New("testenv: no CA certificate")
	}
	cert, err := tls.X509KeyPair(e.CertData, e.KeyData)
	if err != nil {
		return nil, fmt.Errorf("testenv: client certificate: %w", err)
	}
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// HTTPClient returns a client that talks to the server as the admin.
func (e *Env) HTTPClient() (*http.Client, error) {
	tc, err := e.TLSConfig()
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}}, nil
}

// User is a client identity the development CA signed.
type User struct {
	// CertData and KeyData are the user's client certificate and key (PEM).
	CertData, KeyData []byte
	// Kubeconfig is the path of a kubeconfig file for the user.
	Kubeconfig string
}

// NewUser issues a client certificate for name in groups (who then has
// only what RBAC grants them) and writes a kubeconfig for it beside the
// admin's.
func (e *Env) NewUser(name string, groups ...string) (*User, error) {
	p, err := e.Options.SecureServing.CA.IssueClient(name, groups, 24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("testenv: certificate for %s: %w", name, err)
	}
	f, err := os.CreateTemp(filepath.Dir(e.Kubeconfig), "user-*.kubeconfig")
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	path := f.Name()
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	kc := certs.Kubeconfig{Server: e.Host, CAPEM: e.CAData, Client: p}
	if err := kc.WriteFile(path); err != nil {
		return nil, fmt.Errorf("testenv: kubeconfig for %s: %w", name, err)
	}
	return &User{CertData: p.CertPEM, KeyData: p.KeyPEM, Kubeconfig: path}, nil
}
