package respond

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
)

// TestGzipWritersKept: compressed responses written at once leave at most
// gzipWritersKept writers in the heap (~680 KiB each at level 1), not one
// per response the peak had in flight until two collections pass.
func TestGzipWritersKept(t *testing.T) {
	const concurrent = 8
	body := bytes.Repeat([]byte(`{"kind":"Flunder","metadata":{"name":"f-00001"}},`), GzipThreshold/40)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 3 {
		// Every response holds its writer until all have one: their
		// first writes to the connection wait for each other.
		var wg, writing sync.WaitGroup
		writing.Add(concurrent)
		for range concurrent {
			wg.Go(func() {
				Body(&barrierWriter{ResponseRecorder: httptest.NewRecorder(), barrier: &writing}, r, http.StatusOK, "application/json", body)
			})
		}
		wg.Wait()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	kept := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	t.Logf("%d concurrent compressed responses keep %.0f KiB", concurrent, kept/1024)
	if limit := float64(gzipWritersKept)*700*1024 + 256*1024; kept > limit {
		t.Errorf("%d concurrent compressed responses keep %s, want at most %s", concurrent, kib(kept), kib(limit))
	}
}

func kib(b float64) string { return fmt.Sprintf("%.0f KiB", b/1024) }

// barrierWriter's first Write waits until every writer of its barrier
// made one.
type barrierWriter struct {
	*httptest.ResponseRecorder
	barrier *sync.WaitGroup
	waited  bool
}

func (w *barrierWriter) Write(p []byte) (int, error) {
	if !w.waited {
		w.waited = true
		w.barrier.Done()
		w.barrier.Wait()
	}
	return w.ResponseRecorder.Write(p)
}
