package audit

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/certs"
)

// auditWebhook is a real TLS audit webhook on loopback that records the
// EventLists posted to it; answer decides each post's code.
type auditWebhook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	lists  []eventList
	posts  int
	answer func(post int) int
}

func startAuditWebhook(t *testing.T, answer func(post int) int) *auditWebhook {
	t.Helper()
	w := &auditWebhook{answer: answer}
	w.srv = httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.posts++
		post := w.posts
		w.mu.Unlock()
		if code := w.answer(post); code != http.StatusOK {
			rw.WriteHeader(code)
			return
		}
		var l eventList
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &l) != nil {
			t.Errorf("a post %s %q: %.200s", r.Method, r.Header.Get("Content-Type"), body)
		}
		w.mu.Lock()
		w.lists = append(w.lists, l)
		w.mu.Unlock()
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *auditWebhook) kubeconfig() certs.Kubeconfig {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.srv.Certificate().Raw})
	return certs.Kubeconfig{Server: w.srv.URL, CAPEM: ca}
}

func (w *auditWebhook) received() ([]eventList, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]eventList(nil), w.lists...), w.posts
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestWebhookSinkBatches(t *testing.T) {
	w := startAuditWebhook(t, func(int) int { return http.StatusOK })
	hook, err := NewWebhookSink(w.kubeconfig(), DefaultWebhookInitialBackoff)
	if err != nil {
		t.Fatal(err)
	}
	defer hook.Close()
	b := NewBatchSink(hook, BatchConfig{BufferSize: 100, MaxBatchSize: 400, MaxBatchWait: 200 * time.Millisecond})
	for i := range 3 {
		b.Log(&Event{Kind: "Event", APIVersion: "audit.k8s.io/v1", AuditID: fmt.Sprint(i), Stage: StageResponseComplete})
	}
	_ = b.Close() // sends what is queued
	lists, posts := w.received()
	if posts != 1 || len(lists) != 1 {
		t.Fatalf("%d posts, %d lists, want the three events in one", posts, len(lists))
	}
	l := lists[0]
	if l.Kind != "EventList" || l.APIVersion != "audit.k8s.io/v1" || len(l.Items) != 3 || l.Items[2].AuditID != "2" {
		t.Errorf("list %+v", l)
	}
}

func TestWebhookSinkRetries(t *testing.T) {
	// Two failures (503, 429), then the post succeeds.
	w := startAuditWebhook(t, func(post int) int {
		return map[int]int{1: http.StatusServiceUnavailable, 2: http.StatusTooManyRequests}[post] + map[bool]int{true: http.StatusOK}[post > 2]
	})
	hook, err := NewWebhookSink(w.kubeconfig(), 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer hook.Close()
	hook.Log(&Event{AuditID: "retried"})
	lists, posts := w.received()
	if posts != 3 || len(lists) != 1 || lists[0].Items[0].AuditID != "retried" {
		t.Errorf("%d posts, lists %+v", posts, lists)
	}
}

// TestWebhookSinkStuck: a webhook that never answers holds up nothing in
// batch mode (Log returns while it hangs), and Close of the webhook sink
// ends the post under way.
func TestWebhookSinkStuck(t *testing.T) {
	release := make(chan struct{})
	w := startAuditWebhook(t, func(int) int { <-release; return http.StatusOK })
	t.Cleanup(func() { close(release) }) // before the server's Close
	hook, err := NewWebhookSink(w.kubeconfig(), DefaultWebhookInitialBackoff)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatchSink(hook, BatchConfig{BufferSize: 10, MaxBatchSize: 1})
	var slowest time.Duration
	within(t, 20*time.Second, "Log with the webhook stuck", func() {
		for i := range 100 {
			start := time.Now()
			b.Log(&Event{AuditID: fmt.Sprint(i)})
			slowest = max(slowest, time.Since(start))
		}
	})
	t.Logf("slowest Log with the webhook stuck: %v; dropped %d", slowest, b.Dropped())
	if d := b.Dropped(); d < 89 || d > 90 {
		t.Errorf("dropped %d, want 89 or 90", d)
	}
	within(t, 20*time.Second, "Close", func() {
		_ = hook.Close() // the stuck post ends; the queued ones fail at once
		_ = b.Close()
	})
}
