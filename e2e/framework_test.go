package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/apikit-dev/apikit/internal/testlog"
)

// binDir holds the binaries TestMain builds from this checkout.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "apikit-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := func() int {
		defer os.RemoveAll(dir)
		for _, example := range []string{"wardle", "aggregated", "controlplane"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, example), "./examples/"+example)
			cmd.Dir = ".."
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "building %s: %v\n", example, err)
				return 1
			}
		}
		if _, err := exec.LookPath("kubectl"); err != nil {
			fmt.Fprintln(os.Stderr, "kubectl is required by the end-to-end tests:", err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

var flundersGVR = schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1beta1", Resource: "flunders"}

// Wardle is a wardle server process (or another example's: Binary).
type Wardle struct {
	t       *testing.T
	DataDir string
	Port    int
	Args    []string
	// Binary is the example run; "wardle" when empty.
	Binary string

	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *testlog.Buffer
	done chan error
}

// freePort asks the kernel for a free loopback port.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// StartWardle starts a wardle server with a fresh data directory and waits
// until it is ready; it is stopped (SIGTERM, then SIGKILL) when the test ends.
func StartWardle(t *testing.T, args ...string) *Wardle {
	t.Helper()
	w := &Wardle{t: t, DataDir: t.TempDir(), Port: freePort(t), Args: args}
	t.Cleanup(func() { w.Stop() })
	// freePort lets its port go before wardle binds it, and wardle's own
	// embedded etcd (or a test of another package) may take it meanwhile:
	// then start again on another port, in a fresh data directory (the
	// kubeconfig of the first names the first port).
	for try := 1; ; try++ {
		err := w.start()
		if err == nil {
			return w
		}
		if try < 5 && w.portTaken(err) {
			t.Logf("port %d taken meanwhile; starting again on another", w.Port)
			w.DataDir, w.Port = t.TempDir(), freePort(t)
			continue
		}
		t.Fatal(err)
	}
}

// Start (re)starts the process with the same data directory and, unless
// something else took it while wardle was down, the same port: then on
// another (wardle writes its kubeconfig anew at every start, with the
// port it serves on).
func (w *Wardle) Start() {
	w.t.Helper()
	for try := 1; ; try++ {
		err := w.start()
		if err == nil {
			return
		}
		if try < 5 && w.portTaken(err) {
			w.t.Logf("port %d taken while wardle was down; starting again on another", w.Port)
			w.Port = freePort(w.t)
			continue
		}
		w.t.Fatal(err)
	}
}

// portTaken tells whether err is wardle's failure to bind its port.
func (w *Wardle) portTaken(err error) bool {
	return strings.Contains(err.Error(), "127.0.0.1:"+strconv.Itoa(w.Port)+": bind: address already in use")
}

// start starts the process and waits until it is ready, or says why not.
func (w *Wardle) start() error {
	args := append([]string{"--data-dir", w.DataDir, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(w.Port)}, w.Args...)
	bin := w.Binary
	if bin == "" {
		bin = "wardle"
	}
	cmd := exec.Command(filepath.Join(binDir, bin), args...)
	out := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	w.mu.Lock()
	w.cmd, w.out, w.done = cmd, out, done
	w.mu.Unlock()
	return w.waitReady()
}

func (w *Wardle) waitReady() error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-w.done:
			// Put back for Stop, which waits on it.
			w.done <- err
			return fmt.Errorf("wardle exited before it was ready: %v\n%s", err, w.out.String())
		default:
		}
		if _, err := os.Stat(w.Kubeconfig()); err == nil {
			if out, _, err := w.kubectlRaw(context.Background(), "get", "--raw", "/readyz"); err == nil && strings.TrimSpace(out) == "ok" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("wardle not ready after 60s:\n%s", w.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Signal sends sig to the process.
func (w *Wardle) Signal(sig syscall.Signal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd != nil && w.cmd.Process != nil {
		_ = w.cmd.Process.Signal(sig)
	}
}

// Wait waits for the process to exit and returns its exit error.
func (w *Wardle) Wait(timeout time.Duration) (error, bool) {
	select {
	case err := <-w.done:
		w.mu.Lock()
		w.cmd = nil
		w.mu.Unlock()
		return err, true
	case <-time.After(timeout):
		return nil, false
	}
}

// Stop ends the process: SIGTERM, then SIGKILL after 30 s.
func (w *Wardle) Stop() {
	w.mu.Lock()
	running := w.cmd != nil
	w.mu.Unlock()
	if !running {
		return
	}
	w.Signal(syscall.SIGTERM)
	if _, ok := w.Wait(30 * time.Second); !ok {
		w.Signal(syscall.SIGKILL)
		w.Wait(10 * time.Second)
		w.t.Errorf("wardle did not stop on SIGTERM within 30s:\n%s", w.out.String())
	}
}

// Output returns what the process printed.
func (w *Wardle) Output() string { return w.out.String() }

// Kubeconfig is the admin kubeconfig the server wrote.
func (w *Wardle) Kubeconfig() string { return filepath.Join(w.DataDir, "kubeconfig") }

// kubectlCmd is a kubectl command against the server.
func (w *Wardle) kubectlCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+w.Kubeconfig(), "HOME="+w.DataDir)
	return cmd
}

func (w *Wardle) kubectlRaw(ctx context.Context, args ...string) (string, string, error) {
	cmd := w.kubectlCmd(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// Kubectl runs kubectl against the server and fails the test on error.
func (w *Wardle) Kubectl(args ...string) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, errOut, err := w.kubectlRaw(ctx, args...)
	if err != nil {
		w.t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// KubectlStdin runs kubectl with input on stdin.
func (w *Wardle) KubectlStdin(input string, args ...string) string {
	w.t.Helper()
	cmd := exec.Command("kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+w.Kubeconfig(), "HOME="+w.DataDir)
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		w.t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// KubectlFail runs kubectl expecting it to fail and returns its stderr.
func (w *Wardle) KubectlFail(args ...string) string {
	w.t.Helper()
	out, errOut, err := w.kubectlRaw(context.Background(), args...)
	if err == nil {
		w.t.Fatalf("kubectl %s succeeded, want failure:\n%s", strings.Join(args, " "), out)
	}
	return errOut
}

// RESTConfig is a client-go config for the admin user.
func (w *Wardle) RESTConfig() *rest.Config {
	w.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", w.Kubeconfig())
	if err != nil {
		w.t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	return cfg
}

// Dynamic is a dynamic client for the admin user.
func (w *Wardle) Dynamic() dynamic.Interface {
	w.t.Helper()
	c, err := dynamic.NewForConfig(w.RESTConfig())
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}
