package e2e

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/certs"
)

// TestAuditWebhook runs wardle with an audit webhook (a real TLS server on
// loopback) in batch mode, the default: while the webhook hangs, kubectl's
// requests are answered as usual; once it answers, their events arrive,
// RequestReceived and ResponseComplete, in audit.k8s.io/v1 EventLists.
func TestAuditWebhook(t *testing.T) {
	gate := make(chan struct{})
	var mu sync.Mutex
	stages := map[string][]string{} // request URI -> stages
	lists := 0
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-gate
		var l struct {
			Kind, APIVersion string
			Items            []struct{ Stage, RequestURI string }
		}
		if err := json.NewDecoder(r.Body).Decode(&l); err != nil || l.Kind != "EventList" || l.APIVersion != "audit.k8s.io/v1" {
			t.Errorf("the webhook got %+v (%v)", l, err)
		}
		mu.Lock()
		defer mu.Unlock()
		lists++
		for _, ev := range l.Items {
			stages[ev.RequestURI] = append(stages[ev.RequestURI], ev.Stage)
		}
	}))
	t.Cleanup(hook.Close) // after wardle's stop, which posts what is queued
	opened := false
	t.Cleanup(func() {
		if !opened {
			close(gate)
		}
	})
	kubeconfig := filepath.Join(t.TempDir(), "audit-webhook.kubeconfig")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	if err := (certs.Kubeconfig{Server: hook.URL, CAPEM: ca}).WriteFile(kubeconfig); err != nil {
		t.Fatal(err)
	}
	w := StartWardle(t, "--audit-webhook-config-file="+kubeconfig, "--audit-webhook-batch-max-wait=100ms")

	var slowest time.Duration
	for range 5 {
		start := time.Now()
		w.Kubectl("get", "--raw", "/apis/wardle.example.com/v1beta1", "--request-timeout=30s")
		slowest = max(slowest, time.Since(start))
	}
	t.Logf("slowest of 5 kubectl requests while the audit webhook hangs: %v", slowest)

	close(gate)
	opened = true
	const uri = "/apis/wardle.example.com/v1beta1?timeout=30s" // kubectl adds the timeout
	ok := func() bool {
		mu.Lock()
		defer mu.Unlock()
		received, complete := 0, 0
		for _, s := range stages[uri] {
			switch s {
			case "RequestReceived":
				received++
			case "ResponseComplete":
				complete++
			}
		}
		return received == 5 && complete == 5
	}

	deadline := time.Now().Add(60 * time.Second)
	for !ok() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	done := ok()
	mu.Lock()
	if !done {
		t.Errorf("the webhook got, by request URI: %v", stages)
	}
	t.Logf("%d EventLists posted", lists)
	mu.Unlock()
}
