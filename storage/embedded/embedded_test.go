//go:build !apikit_noembed

package embedded

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/etcd3"
	"github.com/apikit-dev/apikit/storage/storagetest"
)

const testBookmarkInterval = 200 * time.Millisecond

func start(t testing.TB, cfg Config) *Etcd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	e, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("embedded etcd ready after %v", time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// TestConformance runs the suite through etcd3 on an embedded etcd with
// its production settings (fsync on).
func TestConformance(t *testing.T) {
	e := start(t, Config{DataDir: t.TempDir()})
	var n atomic.Int64
	began := time.Now()
	storagetest.Run(t, storagetest.Factory{
		New: func(*testing.T) storage.Interface {
			return e.Storage(
				etcd3.WithPrefix(fmt.Sprintf("/registry-%d", n.Add(1))),
				etcd3.WithBookmarkInterval(testBookmarkInterval),
				etcd3.WithMaxRevisionWait(time.Second))
		},
		Compact: func(ctx context.Context, _ storage.Interface, rev int64) error {
			_, err := e.Client().Compact(ctx, rev)
			return err
		},
		BookmarkInterval: testBookmarkInterval,
	})
	t.Logf("conformance suite took %v", time.Since(began).Round(time.Millisecond))
}

func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	e, err := Start(ctx, Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := e.Storage()
	rev, err := s.Create(ctx, "/a", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	e2 := start(t, Config{DataDir: dir})
	s2 := e2.Storage()
	kv, err := s2.Get(ctx, "/a", storage.GetOptions{})
	if err != nil || string(kv.Value) != "1" || kv.Revision != rev {
		t.Fatalf("after restart Get = %+v, %v; want the value at revision %d", kv, err, rev)
	}
	rev2, err := s2.Create(ctx, "/b", []byte("2"))
	if err != nil || rev2 <= rev {
		t.Fatalf("Create after restart = %d, %v; want a revision after %d", rev2, err, rev)
	}
}

func TestTwoServersSideBySide(t *testing.T) {
	a := start(t, Config{DataDir: t.TempDir()})
	b := start(t, Config{DataDir: t.TempDir()})
	ctx := t.Context()
	if _, err := a.Storage().Create(ctx, "/k", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Storage().Get(ctx, "/k", storage.GetOptions{}); !storageNotFound(err) {
		t.Fatalf("b sees a's key: %v", err)
	}
}

func storageNotFound(err error) bool { return storage.CodeOf(err) == storage.CodeNotFound }

func TestStartupTime(t *testing.T) {
	dir := t.TempDir()
	for _, phase := range []string{"fresh", "existing"} {
		began := time.Now()
		e, err := Start(t.Context(), Config{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		d := time.Since(began)
		if _, err := e.Client().Put(t.Context(), "/x", "1"); err != nil {
			t.Fatal(err)
		}
		t.Logf("startup with a %s data dir: %v (first write acknowledged after %v)", phase, d.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if d > 5*time.Second {
			t.Errorf("startup took %v", d)
		}
	}
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	dir := t.TempDir()
	// A first run lets process-wide singletons (gRPC, zap) start theirs.
	e := start(t, Config{DataDir: dir})
	e.Close()
	before := runtime.NumGoroutine()
	for range 3 {
		e, err := Start(t.Context(), Config{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		w := e.Storage()
		if _, err := w.Create(t.Context(), fmt.Sprintf("/g/%d", time.Now().UnixNano()), []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after three start/close cycles, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Start(ctx, Config{DataDir: t.TempDir()}); err == nil {
		t.Fatal("Start with a canceled context succeeded")
	}
	if _, err := Start(t.Context(), Config{}); err == nil {
		t.Fatal("Start without a DataDir succeeded")
	}
}

func TestQuietByDefault(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := start(t, Config{DataDir: t.TempDir(), Logger: l})
	if _, err := e.Client().Put(t.Context(), "/x", "1"); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatalf("etcd logged at the default level:\n%s", buf.String())
	}

	buf.Reset()
	e2 := start(t, Config{DataDir: t.TempDir(), Logger: l, LogLevel: slog.LevelInfo})
	e2.Close()
	if !strings.Contains(buf.String(), "level=INFO") {
		t.Fatalf("no info logs with LogLevel info:\n%.2000s", buf.String())
	}
}

func TestClientURL(t *testing.T) {
	// A free port is known only by listening on it and letting it go, and
	// the tests of other packages running meanwhile may take it first:
	// try a few.
	var e *Etcd
	var addr string
	for try := 1; e == nil; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr = l.Addr().String()
		l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		e, err = Start(ctx, Config{DataDir: t.TempDir(), ClientURL: "http://" + addr})
		cancel()
		if err != nil {
			if try < 5 && strings.Contains(err.Error(), "address already in use") {
				t.Logf("port %s taken meanwhile: %v", addr, err)
				continue
			}
			t.Fatalf("Start: %v", err)
		}
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if _, err := e.Client().Put(t.Context(), "/x", "1"); err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 5 * time.Second, Logger: etcd3.ZapLogger(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Get(t.Context(), "/x")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("Get through %s = %v, %v", addr, resp, err)
	}
}

// childEnv makes the test binary act as a writer that TestKillKeepsAckedWrites
// kills.
const childEnv = "APIKIT_EMBEDDED_WRITER_DIR"

// TestKillKeepsAckedWrites kills a process writing to an embedded etcd with
// SIGKILL and checks that every write it saw acknowledged is there after a
// restart.
func TestKillKeepsAckedWrites(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		writer(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillKeepsAckedWrites$", "-test.v=false")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]string{}
	sc := bufio.NewScanner(out)
	deadline := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "acked" {
			acked[f[1]] = f[2]
		}
		if len(acked) == 200 {
			// Kill it mid-stream, with writes in flight.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	_ = cmd.Wait()
	if len(acked) < 200 {
		t.Fatalf("the writer acknowledged only %d writes before it ended", len(acked))
	}
	e := start(t, Config{DataDir: dir})
	for key, val := range acked {
		resp, err := e.Client().Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != val {
			t.Fatalf("acknowledged write %s=%s lost after SIGKILL (got %v)", key, val, resp.Kvs)
		}
	}
	t.Logf("all %d acknowledged writes survived SIGKILL", len(acked))
}

// writer writes keys from four goroutines until killed, printing each
// acknowledged one.
func writer(dir string) {
	e, err := Start(context.Background(), Config{DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lines := make(chan string, 100)
	for g := range 4 {
		go func() {
			for i := 0; ; i++ {
				key, val := fmt.Sprintf("/kill/%d/%d", g, i), strconv.Itoa(i)
				if _, err := e.Client().Put(context.Background(), key, val); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				lines <- "acked " + key + " " + val
			}
		}()
	}
	for l := range lines {
		fmt.Println(l)
	}
}

// TestProgressOrdered checks that a store on the embedded etcd trusts its
// progress notifications, so that a watch cache serves consistent reads (a
// LIST without resourceVersion) instead of sending each one to etcd. The
// in-process client names no endpoint; the store once asked none for its
// version and left every consistent LIST to etcd, which took a flood of
// LISTs in e2e TestFairness from ~150 to ~30 per second.
func TestProgressOrdered(t *testing.T) {
	e := start(t, Config{DataDir: t.TempDir()})
	po, ok := e.Storage().(storage.ProgressOrderer)
	if !ok {
		t.Fatal("the embedded etcd's store does not say whether its progress notifications are ordered")
	}
	deadline := time.Now().Add(30 * time.Second)
	for !po.ProgressOrdered() {
		if time.Now().After(deadline) {
			t.Fatal("the store never trusted the progress notifications of the embedded etcd (3.7)")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
