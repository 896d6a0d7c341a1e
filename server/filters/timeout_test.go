package filters_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/internal/race"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server/filters"
)

// TestTimeoutAbandonedHandlerKeepsItsWriter: the filter reuses a finished
// request's hand-off (done channel, worker function) for the next one, never an
// abandoned one: a handler that wakes after its 504 and writes must be
// refused, and must not write into the response of a request served
// since.
func TestTimeoutAbandonedHandlerKeepsItsWriter(t *testing.T) {
	longRunning := func(i *request.Info) bool { return i.IsLongRunning() }
	wake := make(chan struct{})
	lateErr := make(chan error, 1)
	var served sync.WaitGroup
	h := filters.WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			// Ignores its context, as a handler stuck in a call might.
			<-wake
			w.Header().Set("X-Late", "1")
			_, err := w.Write([]byte("late"))
			lateErr <- err
		default:
			served.Wait() // until the slow handler has written
			_, _ = w.Write([]byte("fast"))
		}
	}), 50*time.Millisecond, longRunning)

	slow := httptest.NewRecorder()
	h.ServeHTTP(slow, withInfo(httptest.NewRequest("GET", "/slow", nil)))
	if slow.Code != http.StatusGatewayTimeout {
		t.Fatalf("slow: code %d, want 504", slow.Code)
	}
	// Requests served while the slow handler is abandoned, one of them in
	// flight when it writes.
	for range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, withInfo(httptest.NewRequest("GET", "/fast", nil)))
		if rec.Body.String() != "fast" {
			t.Fatalf("fast: %q", rec.Body.String())
		}
	}
	served.Add(1)
	fast := httptest.NewRecorder()
	fastDone := make(chan struct{})
	go func() {
		defer close(fastDone)
		h.ServeHTTP(fast, withInfo(httptest.NewRequest("GET", "/fast", nil)))
	}()
	close(wake)
	select {
	case err := <-lateErr:
		if !errors.Is(err, http.ErrHandlerTimeout) {
			t.Errorf("the abandoned handler's write: %v, want ErrHandlerTimeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the abandoned handler did not write")
	}
	served.Done()
	<-fastDone
	if fast.Body.String() != "fast" || fast.Header().Get("X-Late") != "" {
		t.Errorf("a request served meanwhile: body %q, X-Late %q", fast.Body.String(), fast.Header().Get("X-Late"))
	}
}

// TestTimeoutLateWriteReachesNoOtherResponse: a handler that breaks
// net/http's rule, keeping its ResponseWriter and writing after it
// returned, must not write into the response of a request served since
// (the writer is the request's own, never pooled).
func TestTimeoutLateWriteReachesNoOtherResponse(t *testing.T) {
	var kept http.ResponseWriter
	h := filters.WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/keeps" {
			kept = w
			w.WriteHeader(http.StatusNoContent)
			return
		}
		_, _ = w.Write([]byte("mine"))
		defer func() { _ = recover() }() // the first request's writer may refuse loudly
		kept.Header().Set("X-Late", "1")
		_, _ = kept.Write([]byte("late"))
	}), time.Minute, func(i *request.Info) bool { return i.IsLongRunning() })
	h.ServeHTTP(httptest.NewRecorder(), withInfo(httptest.NewRequest("GET", "/keeps", nil)))
	for range 20 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, withInfo(httptest.NewRequest("GET", "/other", nil)))
		if rec.Body.String() != "mine" || rec.Header().Get("X-Late") != "" {
			t.Fatalf("a later request's response: body %q, X-Late %q", rec.Body.String(), rec.Header().Get("X-Late"))
		}
	}
}

// TestTimeoutAllocations counts what the filter allocates per request
// beyond its handler: the deadline's context, its timer and its done
// channel (five), the handler's request and header map (four), its writer
// (one: see TestTimeoutLateWriteReachesNoOtherResponse). The done channel
// and the worker's function come from a pool, and the URL is shared:
// fourteen allocations before.
func TestTimeoutAllocations(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates on its own")
	}
	h := filters.WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}), time.Minute, func(i *request.Info) bool { return i.IsLongRunning() })
	r := withInfo(httptest.NewRequest("GET", "/apis/g/v/namespaces/ns/things/a", nil))
	r.Header.Set("Accept", "application/json")
	w := &nopWriter{header: http.Header{}}
	h.ServeHTTP(w, r) // the pool's first call, the worker's first goroutine
	allocs := testing.AllocsPerRun(200, func() { h.ServeHTTP(w, r) })
	if allocs > 10 {
		t.Errorf("%v allocations per request, want at most 10", allocs)
	}
}

// nopWriter is a ResponseWriter that writes nowhere.
type nopWriter struct{ header http.Header }

func (w *nopWriter) Header() http.Header         { return w.header }
func (w *nopWriter) WriteHeader(int)             {}
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
