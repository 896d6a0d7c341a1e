package options

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/internal/testlog"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
)

var update = flag.Bool("update", false, "rewrite testdata/help.golden from the current --help")

// TestHelpGolden pins --help: its sections, flags, defaults and texts.
func TestHelpGolden(t *testing.T) {
	cmd := NewServerCommand("example", NewServerRunOptions(), nil)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "help.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./options -run TestHelpGolden -update)", err)
	}
	if out.String() != string(want) {
		t.Errorf("--help differs from %s (go test ./options -run TestHelpGolden -update to accept):\n%s", golden, out.String())
	}
	for _, section := range []string{"Secure serving", "Generic", "Etcd", "Authentication", "Service account", "Authorization",
		"Flow control", "API enablement", "Misc", "Logs", "Global"} {
		if !strings.Contains(out.String(), "\n"+section+" flags:\n") {
			t.Errorf("--help lacks the %s section", section)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	cmd := NewServerCommand("example", NewServerRunOptions(), nil)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--version"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := "example version " + server.DefaultVersion().GitVersion + "\n"; out.String() != want {
		t.Errorf("--version printed %q, want %q", out.String(), want)
	}
}

// restoreLogger undoes the command's slog.SetDefault.
func restoreLogger(t *testing.T) {
	prev := slog.Default()
	t.Cleanup(func() { slog.SetDefault(prev) })
}

func TestCommandReportsEveryErrorBeforeServing(t *testing.T) {
	restoreLogger(t)
	built := false
	cmd := NewServerCommand("example", NewServerRunOptions(), func(*server.Config) (*server.GenericServer, error) {
		built = true
		return nil, nil
	})
	var stderr bytes.Buffer
	cmd.SetOut(io.Discard)
	cmd.SetErr(&stderr)
	dir := t.TempDir()
	cmd.SetArgs([]string{"--data-dir=" + dir, "--secure-port=70000", "--watch-cache-sizes=pods", "--service-cluster-ip-range=10.0.0.0/8"})
	err := cmd.Execute()
	if err == nil || built {
		t.Fatalf("error %v, built %v", err, built)
	}
	want := "Error: invalid options:\n" +
		"  --secure-port 70000 must be between 0 and 65535, inclusive. 0 picks a free port\n" +
		"  invalid value of watch cache size: pods\n" +
		"  specified --service-cluster-ip-range is too large; for 32-bit addresses, the mask must be >= 12\n"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("wrote %v", entries)
	}
}

type widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
}

// buildWidgets serves widgets in test.example.com v1 and v2 and reports
// the address the server will listen on.
func buildWidgets(addr chan<- string) BuildFunc {
	return func(c *server.Config) (*server.GenericServer, error) {
		resource := meta.GroupResource{Group: "test.example.com", Resource: "widgets"}
		s, err := c.Storage.For(resource)
		if err != nil {
			return nil, err
		}
		completed, err := c.Complete()
		if err != nil {
			return nil, err
		}
		srv, err := completed.New("example", server.NewEmptyDelegate())
		if err != nil {
			return nil, err
		}
		g := server.NewAPIGroupInfo("test.example.com")
		for _, v := range []string{"v1", "v2"} {
			st, err := registry.NewStore(registry.Options[*widget]{Resource: resource, Kind: "Widget", StorageVersion: v,
				Strategy: registry.DefaultStrategy[*widget]{}, Storage: s})
			if err != nil {
				return nil, err
			}
			g.AddVersion(v, registry.Serve(st))
		}
		if addr != nil {
			addr <- c.SecureServing.Listener.Addr().String()
		}
		return srv, srv.InstallAPIGroup(g)
	}
}

// running is a server command running in-process.
type running struct {
	base           string // https://127.0.0.1:port
	dataDir        string
	client         *http.Client
	stdout, stderr *testlog.Buffer
	cancel         func()
	done           chan error
}

// runCommand runs the command with buildWidgets on 127.0.0.1, a free port
// and a fresh data directory, waits until it is ready and returns a client
// holding the development PKI's admin certificate.
func runCommand(t *testing.T, args ...string) *running {
	t.Helper()
	restoreLogger(t)
	dir := t.TempDir()
	addr := make(chan string, 1)
	cmd := NewServerCommand("example", NewServerRunOptions(), buildWidgets(addr))
	r := &running{dataDir: dir, stdout: &testlog.Buffer{}, stderr: &testlog.Buffer{}, done: make(chan error, 1)}
	cmd.SetOut(r.stdout)
	cmd.SetErr(r.stderr)
	cmd.SetArgs(append([]string{"--data-dir=" + dir, "--bind-address=127.0.0.1", "--secure-port=0"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() { cancel(); <-r.done; r.done <- nil })
	select {
	case a := <-addr:
		r.base = "https://" + a
	case err := <-r.done:
		t.Fatalf("command ended: %v\n%s", err, r.stderr)
	case <-time.After(60 * time.Second):
		t.Fatal("server not built in 60s")
	}
	pki := filepath.Join(dir, "pki")
	admin, err := tls.LoadX509KeyPair(filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"))
	switch {
	case errors.Is(err, fs.ErrNotExist) && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--tls-cert-file=") }):
		// No development PKI beside a given serving certificate: the
		// client is anonymous and does not verify the server.
		r.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	case err != nil:
		t.Fatal(err)
	default:
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(mustRead(t, filepath.Join(pki, "ca.crt")))
		r.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: roots, Certificates: []tls.Certificate{admin}}}}
	}
	deadline := time.Now().Add(10 * time.Second)
	for code, _ := r.do("GET", "/readyz", ""); code != http.StatusOK; code, _ = r.do("GET", "/readyz", "") {
		if time.Now().After(deadline) {
			t.Fatalf("not ready:\n%s", r.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return r
}

func (r *running) do(method, path, body string) (int, string) {
	req, _ := http.NewRequest(method, r.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// stop ends the command's context and returns what Execute returned.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("no shutdown in 30s")
		return nil
	}
}

// TestCommandServes runs the command in-process: it serves what the build
// function installed, honours --runtime-config, lets the development PKI's
// admin in, logs the flags at debug level and stops cleanly when its
// context ends.
func TestCommandServes(t *testing.T) {
	r := runCommand(t, "--storage-backend=memory", "--log-level=debug", "--runtime-config=test.example.com/v2=false")
	for path, want := range map[string]int{
		"/apis/test.example.com/v1":         http.StatusOK,
		"/apis/test.example.com/v1/widgets": http.StatusOK,
		"/apis/test.example.com/v2":         http.StatusNotFound,
	} {
		if got, body := r.do("GET", path, ""); got != want {
			t.Errorf("GET %s: %d, want %d: %s", path, got, want, body)
		}
	}
	anon, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}).Get(r.base + "/apis")
	if err != nil {
		t.Fatal(err)
	}
	anon.Body.Close()
	if anon.StatusCode != http.StatusUnauthorized {
		t.Errorf("request without credentials: %d, want 401", anon.StatusCode)
	}

	if err := r.stop(t); err != nil {
		t.Fatalf("command: %v\n%s", err, r.stderr)
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(r.base, "https://"), time.Second); err == nil {
		t.Error("still listening after shutdown")
	}
	for _, want := range []string{`FLAG: --secure-port=\"0\"`, `FLAG: --runtime-config=\"test.example.com/v2=false\"`, "shut down cleanly"} {
		if !strings.Contains(r.stderr.String(), want) {
			t.Errorf("stderr lacks %s:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout.String(), "export KUBECONFIG=") {
		t.Errorf("stdout does not say where the kubeconfig is:\n%s", r.stdout)
	}
}

func TestCommandRejectsUnknownRuntimeConfigGroups(t *testing.T) {
	restoreLogger(t)
	cmd := NewServerCommand("example", NewServerRunOptions(), buildWidgets(nil))
	var stderr testlog.Buffer
	cmd.SetOut(io.Discard)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"--data-dir=" + t.TempDir(), "--storage-backend=memory", "--secure-port=0",
		"--runtime-config=test.example.com/v1=true,tpyo.example.com/v1=false"})
	err := cmd.Execute()
	if err == nil || err.Error() != "--runtime-config: unknown api groups tpyo.example.com" {
		t.Fatalf("error %v", err)
	}
}

// TestServingCertificateReload rotates --tls-cert-file and
// --tls-private-key-file under a running server: new handshakes get the
// new certificate within seconds, without a restart.
func TestServingCertificateReload(t *testing.T) {
	ca, err := certs.NewCA("serving-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	install := func(host string) {
		p, err := ca.IssueServing([]string{"127.0.0.1", host}, time.Hour)
		if err == nil {
			err = p.WriteFiles(certPath, keyPath)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	install("first.example.com")
	r := runCommand(t, "--storage-backend=memory", "--tls-cert-file="+certPath, "--tls-private-key-file="+keyPath)
	served := func() string {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(r.base, "https://"), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].DNSNames[0]
	}
	if got := served(); got != "first.example.com" {
		t.Fatalf("serves %s", got)
	}
	install("second.example.com")
	deadline := time.Now().Add(10 * time.Second)
	for served() != "second.example.com" {
		if time.Now().After(deadline) {
			t.Fatal("the rotated certificate is not served after 10 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
