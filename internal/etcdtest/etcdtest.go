package etcdtest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// BinaryEnv names the environment variable that points at a prebuilt etcd
// binary, skipping the build.
const BinaryEnv = "APIKIT_ETCD_BINARY"

// etcdModule is the module that tools/etcd pins.
const etcdModule = "go.etcd.io/etcd/server/v3"

// Start runs an etcd server for the test and returns its client endpoints.
// The server is stopped, by its process id, when the test ends.
func Start(t testing.TB) (endpoints []string) {
	t.Helper()
	bin := Binary(t)
	var lastErr error
	// A free port may be taken between our probe and etcd's bind; a fresh
	// pair of ports settles that.
	for attempt := 0; attempt < 3; attempt++ {
		ep, err := start(t, bin)
		if err == nil {
			return []string{ep}
		}
		lastErr = err
		t.Logf("etcdtest: start attempt %d: %v", attempt+1, err)
	}
	t.Fatalf("etcdtest: cannot start etcd: %v", lastErr)
	return nil
}

func start(t testing.TB, bin string) (string, error) {
	ports, err := FreePorts(2)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "apikit-etcd-")
	if err != nil {
		return "", fmt.Errorf("making the data directory: %w", err)
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	logPath := filepath.Join(dir, "etcd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("creating the log file: %w", err)
	}
	cmd := exec.Command(bin,
		"--name=test",
		"--data-dir="+filepath.Join(dir, "data"),
		"--listen-client-urls="+clientURL,
		"--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=test="+peerURL,
		"--initial-cluster-state=new",
		"--log-level=warn",
		// Test data is thrown away: skipping fsync makes etcd as fast as
		// the tests need without changing any semantics they check.
		"--unsafe-no-fsync",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		os.RemoveAll(dir)
		return "", fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	stop := func() {
		select {
		case err := <-exited:
			t.Logf("etcdtest: etcd (pid %d) had exited on its own (%v):\n%s", cmd.Process.Pid, err, tail(logPath, 20))
		default:
			_ = terminate(cmd.Process)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		logFile.Close()
		os.RemoveAll(dir)
	}

	started := time.Now()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case err := <-exited:
			logFile.Close()
			out := tail(logPath, 20)
			os.RemoveAll(dir)
			return "", fmt.Errorf("etcd exited before it was healthy (%v):\n%s", err, out)
		case <-deadline:
			out := tail(logPath, 20)
			stop()
			return "", fmt.Errorf("etcd not healthy after 60s:\n%s", out)
		case <-time.After(20 * time.Millisecond):
		}
		if healthy(clientURL) {
			break
		}
	}
	t.Logf("etcdtest: etcd (pid %d) healthy at %s after %v", cmd.Process.Pid, clientURL, time.Since(started).Round(time.Millisecond))
	t.Cleanup(stop)
	return clientURL, nil
}

func healthy(clientURL string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(clientURL + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode == http.StatusOK && strings.Contains(b.String(), `"health":"true"`)
}

// FreePorts asks the kernel for n free loopback ports, held until all are
// found so that they are distinct.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Binary returns the path of an etcd binary, building and caching it the
// first time.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := BuildBinary(t.Logf)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	return bin
}

// BuildBinary returns the path of an etcd binary: $APIKIT_ETCD_BINARY when
// set, else the build of tools/etcd cached under the user cache directory,
// made first if needed (logf reports the build). Programs such as the load
// benchmark use it to share the tests' build.
func BuildBinary(logf func(format string, args ...any)) (string, error) {
	if bin := os.Getenv(BinaryEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("$%s: %w", BinaryEnv, err)
		}
		return bin, nil
	}
	toolsDir, err := findToolsDir()
	if err != nil {
		return "", fmt.Errorf("%w (set $%s to use a prebuilt etcd)", err, BinaryEnv)
	}
	return cachedBuild(logf, toolsDir)
}

// findToolsDir locates tools/etcd: next to this source file when it is at
// hand, else in a parent of the working directory (a test's working
// directory is its package's folder).
func findToolsDir() (string, error) {
	var candidates []string
	if _, file, _, ok := runtime.Caller(0); ok {
		candidates = append(candidates, filepath.Join(filepath.Dir(file), "..", "..", "tools", "etcd"))
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			candidates = append(candidates, filepath.Join(d, "tools", "etcd"))
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, c := range candidates {
		if _, err := os.Stat(filepath.Join(c, "go.mod")); err == nil {
			return filepath.Clean(c), nil
		}
	}
	return "", errors.New("cannot find tools/etcd/go.mod")
}

// cacheKey names a build: the etcd version, plus a hash of everything that
// changes the binary (the module's go.mod and go.sum, the Go version, the
// platform).
func cacheKey(toolsDir string) (string, error) {
	mod, err := os.ReadFile(filepath.Join(toolsDir, "go.mod"))
	if err != nil {
		return "", err
	}
	sum, err := os.ReadFile(filepath.Join(toolsDir, "go.sum"))
	if err != nil {
		return "", err
	}
	version := ""
	sc := bufio.NewScanner(bytes.NewReader(mod))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == etcdModule {
			version = f[1]
		}
		if len(f) >= 3 && f[0] == "require" && f[1] == etcdModule {
			version = f[2]
		}
	}
	if version == "" {
		return "", fmt.Errorf("%s/go.mod does not require %s", toolsDir, etcdModule)
	}
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	h := sha256.New()
	for _, b := range [][]byte{mod, sum, goVersion, []byte(runtime.GOOS + "/" + runtime.GOARCH)} {
		h.Write(b)
		h.Write([]byte{0})
	}
	return version + "-" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

func cachedBuild(logf func(format string, args ...any), toolsDir string) (string, error) {
	key, err := cacheKey(toolsDir)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "apikit", "etcd", key)
	bin := filepath.Join(dir, "etcd")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("making the cache directory: %w", err)
	}
	unlock, err := lockFile(filepath.Join(dir, "build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another test process may have built it while we waited for the lock.
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	logf("etcdtest: building etcd %s from %s into %s (once per version; may take a minute or two)", key, toolsDir, dir)
	started := time.Now()
	tmp := filepath.Join(dir, fmt.Sprintf("etcd.tmp%d", os.Getpid()))
	cmd := exec.Command("go", "build", "-o", tmp, etcdModule)
	cmd.Dir = toolsDir
	// The build belongs to tools/etcd alone: no workspace of the caller's
	// may pull other module versions into it.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go build %s in %s: %v\n%s", etcdModule, toolsDir, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("installing the etcd binary: %w", err)
	}
	logf("etcdtest: built etcd in %v", time.Since(started).Round(time.Second))
	return bin, nil
}
