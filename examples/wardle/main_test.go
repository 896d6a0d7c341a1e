package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/internal/testlog"
)

// These tests run the wardle binary as an operator does: built with go
// build, started with flags, stopped with signals.

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

func wardleBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wardle-bin")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "wardle")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return binary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

func TestBadFlagsAreAllReportedAndExitOne(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(wardleBinary(t), "--data-dir="+dir, "--secure-port=70000", "--storage-backend=tape",
		"--max-requests-inflight=0", "--max-mutating-requests-inflight=0", "--service-cluster-ip-range=10.0.0.0/30",
		"--watch-cache-sizes=flunders.wardle.example.com#lots", "--runtime-config=api/all=false",
		"--service-account-max-token-expiration=30m", "--authorization-mode=ABAC", "--client-ca-file="+filepath.Join(dir, "none.crt"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1\n%s", err, stderr.String())
	}
	for _, want := range []string{
		"Error: invalid options:",
		"--secure-port 70000 must be between 0 and 65535, inclusive. 0 picks a free port",
		"--storage-backend invalid, allowed values: embedded, etcd3, memory.",
		"invalid size of watch cache size: flunders.wardle.example.com#lots",
		"the service-account-max-token-expiration must be between 1 hour and 2^32 seconds",
		`authorization-mode "ABAC" is not a valid mode`,
		"invalid configuration: MaxRequestsInFlight=0 and MaxMutatingRequestsInFlight=0; they must add up to something positive",
		"invalid key with only api/all=false",
		"error determining service IP ranges for primary service cidr: the service cluster IP range must be at least 8 IP addresses",
		"--client-ca-file: open " + filepath.Join(dir, "none.crt") + ": no such file or directory",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("invalid flags wrote %v", entries)
	}
}

func TestHelpShowsSections(t *testing.T) {
	out, err := exec.Command(wardleBinary(t), "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Secure serving flags:", "Etcd flags:", "Authentication flags:", "Authorization flags:", "API enablement flags:"} {
		if !strings.Contains(string(out), "\n"+s+"\n") {
			t.Errorf("--help lacks %q", s)
		}
	}
	// The description wraps as the longest flag name of its section
	// leaves room: read it with its line breaks as spaces.
	flat := regexp.MustCompile(`\s+`).ReplaceAll(out, []byte(" "))
	if !regexp.MustCompile(`--data-dir string (?:[^-]|-[^-])*\(default "\.wardle"\)`).Match(flat) {
		t.Errorf("--data-dir does not default to .wardle:\n%s", out)
	}
}

// wardle is a running wardle process.
type wardle struct {
	t       *testing.T
	cmd     *exec.Cmd
	out     *testlog.Buffer
	done    chan error
	dataDir string
	base    string
	client  *http.Client
}

// start runs wardle on 127.0.0.1 with a free port and waits until it is
// ready; the process is killed, by its PID, if the test leaves it running.
func start(t *testing.T, dataDir string, args ...string) *wardle {
	t.Helper()
	os.Remove(filepath.Join(dataDir, "kubeconfig")) // rewritten with this run's port
	cmd := exec.Command(wardleBinary(t), append([]string{"--data-dir=" + dataDir, "--bind-address=127.0.0.1", "--secure-port=0"}, args...)...)
	out := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &wardle{t: t, cmd: cmd, out: out, done: make(chan error, 1), dataDir: dataDir}
	go func() { w.done <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			_ = cmd.Process.Kill()
			<-w.done
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := regexp.MustCompile(`server: (https://127\.0\.0\.1:\d+)`).FindSubmatch(readFile(filepath.Join(dataDir, "kubeconfig"))); m != nil {
			w.base = string(m[1])
			break
		}
		w.checkAlive(deadline)
		time.Sleep(20 * time.Millisecond)
	}
	pki := filepath.Join(dataDir, "pki")
	admin, err := tls.LoadX509KeyPair(filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(readFile(filepath.Join(pki, "ca.crt")))
	w.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}}}}
	for {
		if code, _ := w.do("GET", "/readyz", ""); code == http.StatusOK {
			return w
		}
		w.checkAlive(deadline)
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *wardle) checkAlive(deadline time.Time) {
	w.t.Helper()
	select {
	case err := <-w.done:
		w.t.Fatalf("wardle exited: %v\n%s", err, w.out.String())
	default:
	}
	if time.Now().After(deadline) {
		w.t.Fatalf("wardle not ready in time:\n%s", w.out.String())
	}
}

func readFile(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

func (w *wardle) do(method, path, body string) (int, string) {
	req, err := http.NewRequestWithContext(context.Background(), method, w.base+path, strings.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// wait returns the process's exit status, failing after timeout.
func (w *wardle) wait(timeout time.Duration) int {
	w.t.Helper()
	select {
	case err := <-w.done:
		w.done <- err // for the cleanup
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			w.t.Fatal(err)
		}
		return 0
	case <-time.After(timeout):
		w.t.Fatalf("wardle still running after %v:\n%s", timeout, w.out.String())
		return -1
	}
}

func TestSIGTERMShutsDownGracefully(t *testing.T) {
	w := start(t, t.TempDir(), "--storage-backend=memory")
	if code, body := w.do("GET", "/apis/wardle.example.com/v1beta1", ""); code != http.StatusOK {
		t.Fatalf("discovery: %d %s", code, body)
	}
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit status %d after SIGTERM:\n%s", code, w.out.String())
	}
	if !strings.Contains(w.out.String(), "shut down cleanly") {
		t.Errorf("no clean shutdown:\n%s", w.out.String())
	}
}

func TestSecondSignalExitsAtOnce(t *testing.T) {
	w := start(t, t.TempDir(), "--storage-backend=memory", "--shutdown-delay-duration=60s")
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(w.out.String(), "shutting down") {
		w.checkAlive(deadline)
		time.Sleep(10 * time.Millisecond)
	}
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := w.wait(5 * time.Second); code != 1 {
		t.Fatalf("exit status %d after a second signal, want 1:\n%s", code, w.out.String())
	}
	if !strings.Contains(w.out.String(), "wardle: second signal, exiting now") {
		t.Errorf("output:\n%s", w.out.String())
	}
}

// TestRestartKeepsDataAndCredentials runs the default, embedded etcd twice
// on one data directory.
func TestRestartKeepsDataAndCredentials(t *testing.T) {
	dir := t.TempDir()
	w := start(t, dir)
	flunder := `{"apiVersion":"wardle.example.com/v1beta1","kind":"Flunder","metadata":{"name":"kept"},"spec":{"referenceType":"Flunder","flunderReference":"other"}}`
	if code, body := w.do("POST", "/apis/wardle.example.com/v1beta1/namespaces/default/flunders", flunder); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	ca := readFile(filepath.Join(dir, "pki", "ca.crt"))
	admin := readFile(filepath.Join(dir, "pki", "admin.crt"))
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	if code := w.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit status %d:\n%s", code, w.out.String())
	}

	w2 := start(t, dir)
	if code, body := w2.do("GET", "/apis/wardle.example.com/v1beta1/namespaces/default/flunders/kept", ""); code != http.StatusOK {
		t.Fatalf("after restart: %d %s", code, body)
	}
	if !bytes.Equal(ca, readFile(filepath.Join(dir, "pki", "ca.crt"))) || !bytes.Equal(admin, readFile(filepath.Join(dir, "pki", "admin.crt"))) {
		t.Error("restart replaced the CA or the admin certificate")
	}
	_ = w2.cmd.Process.Signal(syscall.SIGTERM)
	if code := w2.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit status %d:\n%s", code, w2.out.String())
	}
}
