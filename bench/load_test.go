package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestListMeta(t *testing.T) {
	for _, tc := range []struct {
		name, body, rv, cont string
	}{
		{"metadata first", `{"kind":"FlunderList","apiVersion":"wardle.example.com/v1beta1","metadata":{"resourceVersion":"42","continue":"abc"},"items":[{"a":1}]}`, "42", "abc"},
		{"metadata after items", `{"items":[{"metadata":{"resourceVersion":"1"}}],"metadata":{"resourceVersion":"7"}}`, "7", ""},
		{"last page", `{"metadata":{"resourceVersion":"9","remainingItemCount":0},"items":[]}`, "9", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rv, cont, err := listMeta([]byte(tc.body))
			if err != nil || rv != tc.rv || cont != tc.cont {
				t.Fatalf("listMeta = %q, %q, %v; want %q, %q", rv, cont, err, tc.rv, tc.cont)
			}
		})
	}
	for _, bad := range []string{``, `[]`, `{"items":[]}`, `{"metadata":`} {
		if _, _, err := listMeta([]byte(bad)); err == nil {
			t.Errorf("listMeta(%q) succeeded", bad)
		}
	}
}

func TestCountItems(t *testing.T) {
	n, err := countItems([]byte(`{"metadata":{},"items":[{},{"x":[1,2]},{}]}`))
	if err != nil || n != 3 {
		t.Fatalf("countItems = %d, %v; want 3", n, err)
	}
	if _, err := countItems([]byte(`{"items":`)); err == nil {
		t.Fatal("countItems of truncated JSON succeeded")
	}
}

func TestBodies(t *testing.T) {
	for _, b := range [][]byte{flunders.createBody(flunderName(7), 7), flunders.updateBody(flunderName(7), 7, "123")} {
		var f struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name, Namespace, ResourceVersion string
			} `json:"metadata"`
			Spec map[string]string `json:"spec"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if f.Kind != "Flunder" || f.Metadata.Name != "flunder-00007" || f.Metadata.Namespace != namespace || f.Spec["referenceType"] != "Flunder" {
			t.Fatalf("unexpected body %s", b)
		}
	}
	if !bytes.Contains(flunders.updateBody("x", 1, "123"), []byte(`"resourceVersion":"123"`)) {
		t.Fatal("update body lacks the resourceVersion")
	}
}

func TestWatchName(t *testing.T) {
	for _, i := range []int{0, 7, 99999} {
		if got, ok := watchIndex(watchName(i)); !ok || got != i {
			t.Errorf("watchIndex(watchName(%d)) = %d, %v", i, got, ok)
		}
	}
	for _, bad := range []string{"flunder-00001", "watch-", "watch-x", "watch--1"} {
		if _, ok := watchIndex(bad); ok {
			t.Errorf("watchIndex(%q) ok", bad)
		}
	}
}

func TestForEach(t *testing.T) {
	var seen [100]atomic.Int32
	if _, err := forEach(context.Background(), len(seen), 8, func(_ context.Context, w, i int) error {
		if w < 0 || w >= 8 {
			return fmt.Errorf("worker %d", w)
		}
		seen[i].Add(1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := range seen {
		if n := seen[i].Load(); n != 1 {
			t.Fatalf("op %d ran %d times", i, n)
		}
	}

	boom := errors.New("boom")
	var ran atomic.Int32
	_, err := forEach(context.Background(), 1000, 4, func(ctx context.Context, _, i int) error {
		ran.Add(1)
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("forEach = %v, want boom", err)
	}
	if ran.Load() >= 1000 {
		t.Fatal("an error did not stop the other workers")
	}
}

// fakeServer serves Flunder creates and a watch of them over HTTP/2.
type fakeServer struct {
	mu       sync.Mutex
	watchers []chan string
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
		ch := make(chan string, 10000)
		f.mu.Lock()
		f.watchers = append(f.watchers, ch)
		f.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case name := <-ch:
				fmt.Fprintf(w, `{"type":"ADDED","object":{"metadata":{"name":%q,"resourceVersion":"2"}}}`+"\n", name)
				w.(http.Flusher).Flush()
			}
		}
	case r.Method == http.MethodPost:
		var m objectMeta
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		for _, ch := range f.watchers {
			ch <- m.Metadata.Name
		}
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"metadata":{"name":%q,"resourceVersion":"2"}}`, m.Metadata.Name)
	case r.URL.Path == "/big":
		// A large response, gzipped for a client that asks, as both
		// servers do above 128 KiB.
		big := strings.Repeat(`{"metadata":{"name":"flunder"}},`, 10000)
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			fmt.Fprint(w, big)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprint(zw, big)
		zw.Close()
	case r.Method == http.MethodPatch:
		// A server-side apply: its content type and field manager.
		if ct := r.Header.Get("Content-Type"); ct != "application/apply-patch+yaml" {
			http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
			return
		}
		if r.URL.Query().Get("fieldManager") != "bench" || r.URL.Query().Get("force") != "true" {
			http.Error(w, "fieldManager and force", http.StatusUnprocessableEntity)
			return
		}
		io.Copy(w, r.Body)
	case r.URL.Query().Get("limit") != "":
		// Two pages: the first with a continue token.
		if r.URL.Query().Get("continue") == "" {
			fmt.Fprint(w, `{"metadata":{"resourceVersion":"5","continue":"next"},"items":[{},{}]}`)
		} else {
			fmt.Fprint(w, `{"metadata":{"resourceVersion":"5"},"items":[{}]}`)
		}
	default:
		http.Error(w, "no", http.StatusNotFound)
	}
}

func newFakeClient(t *testing.T, http2 bool) *apiClient {
	t.Helper()
	ts := httptest.NewUnstartedServer(&fakeServer{})
	ts.EnableHTTP2 = http2
	ts.StartTLS()
	t.Cleanup(ts.Close)
	conf := &tls.Config{RootCAs: ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	c := newAPIClient(ts.URL, conf)
	t.Cleanup(c.close)
	return c
}

func TestWatchLatency(t *testing.T) {
	c := newFakeClient(t, true)
	lat, err := c.watchLatency(context.Background(), flunders, "1", 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(lat) != 50 {
		t.Fatalf("%d latencies, want 50", len(lat))
	}
	for i, l := range lat {
		if l <= 0 || l > 10*time.Second {
			t.Fatalf("latency %d = %v", i, l)
		}
	}
}

func TestListAllFollowsContinue(t *testing.T) {
	c := newFakeClient(t, true)
	var buf bytes.Buffer
	items := 0
	size, wire, pages, err := listAll(context.Background(), c, collection, 2, &buf, func(page []byte) error {
		n, err := countItems(page)
		items += n
		return err
	})
	if err != nil || pages != 2 || items != 3 || size == 0 || wire != size {
		t.Fatalf("listAll = size %d, wire %d, %d pages, %d items, %v; want 2 pages, 3 items, as many bytes on the wire (not gzipped)", size, wire, pages, items, err)
	}
}

func TestDoWantsHTTP2AndStatus(t *testing.T) {
	var buf bytes.Buffer
	c := newFakeClient(t, true)
	err := c.do(context.Background(), http.MethodGet, "/nothing", nil, http.StatusOK, &buf)
	var se *statusError
	if !errors.As(err, &se) || se.code != http.StatusNotFound {
		t.Fatalf("do = %v, want a 404 statusError", err)
	}
	c1 := newFakeClient(t, false)
	if err := c1.do(context.Background(), http.MethodGet, collection+"?limit=1", nil, http.StatusOK, &buf); err == nil || !strings.Contains(err.Error(), "HTTP/2") {
		t.Fatalf("do over HTTP/1.1 = %v, want an HTTP/2 error", err)
	}
}

// TestSendEncoding: the client asks for gzip, as Go's transport does
// unasked (and so the benchmark's client always did), gets the body decoded
// and counts the compressed bytes on the wire; with -identity it asks for
// the body as it is, and the wire carries every byte.
func TestSendEncoding(t *testing.T) {
	want := strings.Repeat(`{"metadata":{"name":"flunder"}},`, 10000)
	for _, tc := range []struct {
		name     string
		identity bool
		wireOK   func(wire int) bool
	}{
		{"gzip", false, func(wire int) bool { return wire > 0 && wire < len(want)/10 }},
		{"identity", true, func(wire int) bool { return wire == len(want) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeClient(t, true)
			c.identity = tc.identity
			var buf bytes.Buffer
			wire, err := c.send(context.Background(), http.MethodGet, "/big", jsonType, nil, http.StatusOK, &buf)
			if err != nil {
				t.Fatal(err)
			}
			if buf.String() != want {
				t.Fatalf("body of %d bytes, want the %d decoded", buf.Len(), len(want))
			}
			if !tc.wireOK(wire) {
				t.Fatalf("%d bytes on the wire for %d decoded", wire, len(want))
			}
		})
	}
}

func TestApply(t *testing.T) {
	c := newFakeClient(t, true)
	var buf bytes.Buffer
	if _, err := c.send(context.Background(), http.MethodPatch, flunders.applyPath(flunderName(3)), applyType, flunders.applyBody(flunderName(3), 3), http.StatusOK, &buf); err != nil {
		t.Fatal(err)
	}
	var f struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name, Namespace, ResourceVersion string
		} `json:"metadata"`
		Spec map[string]string `json:"spec"`
	}
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatalf("%s: %v", buf.Bytes(), err)
	}
	// Only the applied field: the apply does not own referenceType, and
	// needs no resourceVersion.
	if f.Kind != "Flunder" || f.Metadata.Name != "flunder-00003" || f.Metadata.Namespace != namespace || f.Metadata.ResourceVersion != "" ||
		len(f.Spec) != 1 || f.Spec["flunderReference"] != "flunder-applied-00003" {
		t.Fatalf("unexpected apply configuration %s", buf.Bytes())
	}
}

func TestCheckApplied(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"applied", `{"metadata":{"name":"flunder-00003","managedFields":[{"manager":"Go-http-client","operation":"Update"},{"manager":"bench","operation":"Apply"}]},"spec":{"flunderReference":"flunder-applied-00003"}}`, true},
		{"old value", `{"metadata":{"name":"flunder-00003","managedFields":[{"manager":"bench","operation":"Apply"}]},"spec":{"flunderReference":"flunder-updated-00003"}}`, false},
		{"no managedFields", `{"metadata":{"name":"flunder-00003"},"spec":{"flunderReference":"flunder-applied-00003"}}`, false},
		{"bench updated, not applied", `{"metadata":{"name":"flunder-00003","managedFields":[{"manager":"bench","operation":"Update"}]},"spec":{"flunderReference":"flunder-applied-00003"}}`, false},
		{"not JSON", `{`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkApplied([]byte(tc.body), 3); (err == nil) != tc.ok {
				t.Fatalf("checkApplied = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
