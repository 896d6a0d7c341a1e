package e2e

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apikit-dev/apikit/internal/etcdtest"
)

// createConcurrently creates n flunders with 20 workers, calling mid after
// roughly half of them were acknowledged, and returns the names the server
// acknowledged with 201.
func createConcurrently(t *testing.T, w *Wardle, ns string, n int, mid func()) []string {
	t.Helper()
	res := w.Dynamic().Resource(flundersGVR).Namespace(ns)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu    sync.Mutex
		acked []string
		once  sync.Once
		wg    sync.WaitGroup
	)
	names := make(chan string)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				_, err := res.Create(ctx, newFlunder(ns, name, "x"), metav1.CreateOptions{})
				if err != nil {
					continue // the server is going away: not acknowledged
				}
				mu.Lock()
				acked = append(acked, name)
				k := len(acked)
				mu.Unlock()
				if k == n/2 {
					once.Do(mid)
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		names <- fmt.Sprintf("f-%03d", i)
	}
	close(names)
	wg.Wait()
	return acked
}

// checkPresent fails for every acknowledged name the server does not have.
func checkPresent(t *testing.T, w *Wardle, ns string, acked []string) {
	t.Helper()
	list, err := w.Dynamic().Resource(flundersGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, item := range list.Items {
		have[item.GetName()] = true
	}
	for _, name := range acked {
		if !have[name] {
			t.Errorf("%s was acknowledged with 201 but is gone after the restart", name)
		}
	}
	t.Logf("%d creates acknowledged, %d objects after restart", len(acked), len(list.Items))
}

// TestDurabilityAfterSIGKILL kills the server during 200 concurrent creates:
// every create answered 201 must survive the restart.
func TestDurabilityAfterSIGKILL(t *testing.T) {
	w := StartWardle(t)
	acked := createConcurrently(t, w, "durable", 200, func() { w.Signal(syscall.SIGKILL) })
	if _, ok := w.Wait(30 * time.Second); !ok {
		t.Fatal("wardle did not die on SIGKILL")
	}
	if len(acked) < 100 {
		t.Fatalf("only %d creates acknowledged before the kill", len(acked))
	}
	w.Start()
	checkPresent(t, w, "durable", acked)
}

// TestGracefulSIGTERM sends SIGTERM during concurrent creates: requests in
// flight complete, the process exits 0, and what was acknowledged stays.
func TestGracefulSIGTERM(t *testing.T) {
	w := StartWardle(t)
	exited := make(chan error, 1)
	acked := createConcurrently(t, w, "graceful", 200, func() {
		w.Signal(syscall.SIGTERM)
		go func() {
			err, ok := w.Wait(60 * time.Second)
			if !ok {
				err = fmt.Errorf("no exit within 60s")
			}
			exited <- err
		}()
	})
	if err := <-exited; err != nil {
		t.Fatalf("wardle exited with %v after SIGTERM, want status 0:\n%s", err, w.Output())
	}
	w.Start()
	checkPresent(t, w, "graceful", acked)
}

// TestExternalEtcd runs wardle on a separately started etcd process and
// checks that data outlives the server.
func TestExternalEtcd(t *testing.T) {
	endpoints := etcdtest.Start(t)
	w := StartWardle(t, "--etcd-servers", endpoints[0])
	res := w.Dynamic().Resource(flundersGVR).Namespace("ext")
	ctx := context.Background()
	if _, err := res.Create(ctx, newFlunder("ext", "kept", "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	w.Start()
	got, err := res.Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetUID() == "" {
		t.Error("object lost its uid")
	}
	if err := res.Delete(ctx, "kept", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Get(ctx, "kept", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v", err)
	}
}
