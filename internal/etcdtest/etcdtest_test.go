package etcdtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestStart(t *testing.T) {
	eps := Start(t)
	if len(eps) != 1 || !strings.HasPrefix(eps[0], "http://127.0.0.1:") {
		t.Fatalf("endpoints %v; want one loopback URL", eps)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "/etcdtest/a", "1"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	resp, err := c.Get(ctx, "/etcdtest/a")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "1" {
		t.Fatalf("Get = %v, %v", resp, err)
	}
}

func TestTwoServersDoNotCollide(t *testing.T) {
	a, b := Start(t), Start(t)
	if a[0] == b[0] {
		t.Fatalf("both servers at %s", a[0])
	}
}

// TestStopsByPID checks that Cleanup ends the process it started.
func TestStopsByPID(t *testing.T) {
	var eps []string
	t.Run("server", func(t *testing.T) { eps = Start(t) })
	// After the subtest's cleanup the port no longer answers.
	if healthy(eps[0]) {
		t.Fatalf("etcd at %s still answers after its test ended", eps[0])
	}
}

func TestBinaryEnvOverride(t *testing.T) {
	bin := Binary(t)
	t.Setenv(BinaryEnv, bin)
	if got := Binary(t); got != bin {
		t.Fatalf("Binary() = %q with $%s=%q", got, BinaryEnv, bin)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "etcd Version: 3.") {
		t.Fatalf("%s --version: %v\n%s", bin, err, out)
	}
}

func TestCacheKeyNamesTheVersion(t *testing.T) {
	dir, err := findToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	key, err := cacheKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, "v3.") {
		t.Fatalf("cache key %q does not start with the etcd version", key)
	}
}

func TestLockFileExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := lockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	held := true
	done := make(chan struct{})
	go func() {
		defer close(done)
		u, err := lockFile(path)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		if held {
			t.Error("second lock taken while the first is held")
		}
		mu.Unlock()
		u()
	}()
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	held = false
	mu.Unlock()
	unlock()
	<-done
	if _, err := os.Stat(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}
