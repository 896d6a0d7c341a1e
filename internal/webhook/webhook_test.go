package webhook

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/certs"
)

func serve(t *testing.T, h http.HandlerFunc) certs.Kubeconfig {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return certs.Kubeconfig{Server: srv.URL, CAPEM: ca, Token: "s3cret"}
}

func TestPost(t *testing.T) {
	var calls atomic.Int32
	var failFirst atomic.Int32
	kc := serve(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request headers", http.StatusBadRequest)
			return
		}
		if failFirst.Add(-1) >= 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Review","status":{"allowed":true}}`))
	})
	c, err := New(Config{Kubeconfig: kc, Retries: 3})
	if err != nil {
		t.Fatal(err)
	}
	c.Backoff = time.Millisecond
	var out struct {
		Kind   string `json:"kind"`
		Status struct {
			Allowed bool `json:"allowed"`
		} `json:"status"`
	}
	failFirst.Store(2)
	if err := c.Post(context.Background(), []byte(`{}`), &out); err != nil || !out.Status.Allowed || calls.Load() != 3 {
		t.Fatalf("after two 503s: %v, %+v, %d calls", err, out, calls.Load())
	}

	calls.Store(0)
	failFirst.Store(100)
	err = c.Post(context.Background(), []byte(`{}`), &out)
	if err == nil || !strings.Contains(err.Error(), "503 Service Unavailable") || calls.Load() != 4 {
		t.Errorf("a webhook that keeps failing: %v after %d calls, want the 503 after 4", err, calls.Load())
	}
}

func TestPostRefusal(t *testing.T) {
	var calls atomic.Int32
	kc := serve(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","message":"no access for you"}`))
	})
	c, err := New(Config{Kubeconfig: kc})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Post(context.Background(), []byte(`{"token":"never in errors"}`), &struct{}{})
	if err == nil || !strings.Contains(err.Error(), "403 Forbidden: no access for you") || calls.Load() != 1 {
		t.Errorf("a refusal: %v after %d calls, want it once with the Status message", err, calls.Load())
	}
	if strings.Contains(err.Error(), "never in errors") {
		t.Error("the request body leaked into the error")
	}
}

func TestPostTooLarge(t *testing.T) {
	kc := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"kind":"` + strings.Repeat("x", maxResponseBytes) + `"}`))
	})
	c, err := New(Config{Kubeconfig: kc})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Post(context.Background(), []byte(`{}`), &struct{}{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("an oversized answer: %v", err)
	}
}

func TestNewNeedsServer(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("a kubeconfig without a server was accepted")
	}
}
