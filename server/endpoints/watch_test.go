package endpoints_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
)

// watchStream is an open watch response read line by line.
type watchStream struct {
	t    *testing.T
	resp *http.Response
	r    *bufio.Reader
}

func (ts *testServer) watch(t *testing.T, query, accept string) *watchStream {
	t.Helper()
	hr, err := http.NewRequest("GET", ts.URL+ns+"?watch=true&"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		hr.Header.Set("Accept", accept)
	}
	resp, err := ts.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &watchStream{t: t, resp: resp, r: bufio.NewReader(resp.Body)}
}

// line returns the next frame, raw, without its newline.
func (w *watchStream) line() string {
	w.t.Helper()
	type result struct {
		s   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := w.r.ReadString('\n')
		ch <- result{s, err}
	}()
	select {
	case res := <-ch:
		if res.err != nil {
			w.t.Fatalf("reading the watch: %v (got %q)", res.err, res.s)
		}
		return strings.TrimSuffix(res.s, "\n")
	case <-time.After(10 * time.Second):
		w.t.Fatal("no watch event in time")
	}
	return ""
}

// event returns the next frame decoded.
func (w *watchStream) event() (string, map[string]any) {
	w.t.Helper()
	var ev struct {
		Type   string         `json:"type"`
		Object map[string]any `json:"object"`
	}
	l := w.line()
	if err := json.Unmarshal([]byte(l), &ev); err != nil {
		w.t.Fatalf("frame %q: %v", l, err)
	}
	return ev.Type, ev.Object
}

// ends waits for the server to end the stream.
func (w *watchStream) ends() {
	w.t.Helper()
	done := make(chan error, 1)
	go func() {
		rest, err := io.ReadAll(w.r)
		if err == nil && len(rest) > 0 {
			err = io.ErrUnexpectedEOF
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			w.t.Errorf("stream ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		w.t.Fatal("the watch did not end")
	}
}

func TestWatchFraming(t *testing.T) {
	ts := newTestServer(t)
	first := ts.create(t, "a", `{"size":1}`)
	w := ts.watch(t, "resourceVersion="+path(first, "metadata.resourceVersion").(string), "")
	if w.resp.StatusCode != 200 || w.resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", w.resp.StatusCode, w.resp.Header.Get("Content-Type"))
	}
	b := ts.create(t, "b", `{"size":2}`)
	l := w.line()
	if !strings.HasPrefix(l, `{"type":"ADDED","object":{"kind":"Widget","apiVersion":"test.example.com/v1","metadata":{"name":"b",`) || !strings.HasSuffix(l, "}}") {
		t.Errorf("frame %s", l)
	}
	resp, body := ts.do(t, req{method: "PATCH", path: ns + "/b", body: `{"spec":{"size":3}}`, contentType: "application/merge-patch+json"})
	if resp.StatusCode != 200 {
		t.Fatal(string(body))
	}
	typ, obj := w.event()
	if typ != "MODIFIED" || path(obj, "spec.size") != 3.0 || path(obj, "metadata.resourceVersion") == path(b, "metadata.resourceVersion") {
		t.Errorf("%s %v", typ, obj)
	}
	resp, body = ts.do(t, req{method: "DELETE", path: ns + "/b"})
	if resp.StatusCode != 200 {
		t.Fatal(string(body))
	}
	typ, obj = w.event()
	if typ != "DELETED" || path(obj, "metadata.name") != "b" || path(obj, "metadata.resourceVersion") != path(decode(t, body), "metadata.resourceVersion") {
		t.Errorf("%s %v, want the delete's resourceVersion", typ, obj)
	}
}

func TestWatchTimeoutSeconds(t *testing.T) {
	ts := newTestServer(t)
	start := time.Now()
	w := ts.watch(t, "timeoutSeconds=1", "")
	w.ends()
	if d := time.Since(start); d < time.Second {
		t.Errorf("the watch ended after %v, before its timeout", d)
	}
}

func TestWatchError(t *testing.T) {
	ts := newTestServer(t)
	a := ts.create(t, "a", "")
	ts.create(t, "b", "")
	ts.create(t, "c", "")
	rev, _ := ts.mem.CurrentRevision(t.Context())
	if err := ts.mem.Compact(rev); err != nil {
		t.Fatal(err)
	}
	w := ts.watch(t, "resourceVersion="+path(a, "metadata.resourceVersion").(string), "")
	if w.resp.StatusCode != 200 {
		t.Fatalf("%d", w.resp.StatusCode)
	}
	typ, obj := w.event()
	if typ != "ERROR" || obj["kind"] != "Status" || obj["apiVersion"] != "v1" || obj["code"] != 410.0 || obj["reason"] != "Expired" || obj["status"] != "Failure" {
		t.Errorf("%s %v, want an ERROR event with a 410 Expired Status", typ, obj)
	}
	w.ends()
}

func TestWatchInitialEventsAndBookmarks(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "a", "")
	rev, _ := ts.mem.CurrentRevision(t.Context())
	w := ts.watch(t, "sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan", "")
	if typ, obj := w.event(); typ != "ADDED" || path(obj, "metadata.name") != "a" {
		t.Fatalf("%s %v", typ, obj)
	}
	typ, obj := w.event()
	ann, _ := path(obj, "metadata.annotations").(map[string]any) // the key has dots: read it directly
	if typ != "BOOKMARK" || ann["k8s.io/initial-events-end"] != "true" || path(obj, "metadata.resourceVersion") != strconv.FormatInt(rev, 10) ||
		obj["kind"] != "Widget" || obj["apiVersion"] != "test.example.com/v1" {
		t.Errorf("%s %v, want the initial-events-end BOOKMARK", typ, obj)
	}
	// Periodic bookmarks follow.
	if typ, obj := w.event(); typ != "BOOKMARK" || path(obj, "metadata.annotations") != nil {
		t.Errorf("%s %v, want a periodic BOOKMARK", typ, obj)
	}

	resp, b := ts.do(t, req{method: "GET", path: ns + "?watch=true&sendInitialEvents=true"})
	wantStatus(t, resp, b, 422, meta.StatusReasonInvalid,
		`ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan`)
}

// TestWatchInitialEventsWithoutBookmarks: kube-apiserver accepts
// sendInitialEvents without allowWatchBookmarks and sends the initial
// events without the bookmark that ends them.
func TestWatchInitialEventsWithoutBookmarks(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "a", "")
	w := ts.watch(t, "sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "")
	if w.resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", w.resp.StatusCode)
	}
	if typ, obj := w.event(); typ != "ADDED" || path(obj, "metadata.name") != "a" {
		t.Fatalf("%s %v, want a's ADDED", typ, obj)
	}
	ts.create(t, "b", "")
	if typ, obj := w.event(); typ != "ADDED" || path(obj, "metadata.name") != "b" {
		t.Fatalf("%s %v, want b's ADDED and no BOOKMARK before it", typ, obj)
	}
}

// TestWatchInitialEventsNotOlderThanCompacted: a streaming list not older
// than a compacted revision sends the current state, never 410.
func TestWatchInitialEventsNotOlderThanCompacted(t *testing.T) {
	ts := newTestServer(t)
	a := ts.create(t, "a", "")
	ts.create(t, "b", "")
	rev, _ := ts.mem.CurrentRevision(t.Context())
	if err := ts.mem.Compact(rev); err != nil {
		t.Fatal(err)
	}
	w := ts.watch(t, "sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion="+
		path(a, "metadata.resourceVersion").(string), "")
	if w.resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", w.resp.StatusCode)
	}
	names := map[any]bool{}
	for range 2 {
		typ, obj := w.event()
		if typ != "ADDED" {
			t.Fatalf("%s %v, want the current state as ADDED events", typ, obj)
		}
		names[path(obj, "metadata.name")] = true
	}
	typ, obj := w.event()
	if !names["a"] || !names["b"] || typ != "BOOKMARK" || path(obj, "metadata.resourceVersion") != strconv.FormatInt(rev, 10) {
		t.Errorf("got %v then %s %v; want a and b, then the bookmark at %d", names, typ, obj, rev)
	}
}

func TestWatchForms(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "a", `{"size":4}`)

	t.Run("Table", func(t *testing.T) {
		ts := newTestServer(t) // this one creates more
		ts.create(t, "a", `{"size":4}`)
		w := ts.watch(t, "", kubectlGet)
		typ, obj := w.event()
		rows, _ := obj["rows"].([]any)
		if typ != "ADDED" || obj["kind"] != "Table" || len(rows) != 1 {
			t.Fatalf("%s %v", typ, obj)
		}
		if cells := rows[0].(map[string]any)["cells"].([]any); cells[0] != "a" || cells[1] != 4.0 {
			t.Errorf("cells %v", cells)
		}
		if cols, _ := obj["columnDefinitions"].([]any); len(cols) == 0 {
			t.Errorf("the first Table has no column definitions: %v", obj)
		}
		// Later Tables leave them out, as kube-apiserver's (kubectl
		// keeps the first ones).
		ts.create(t, "b", `{"size":5}`)
		typ, obj = w.event()
		rows, _ = obj["rows"].([]any)
		if typ != "ADDED" || obj["kind"] != "Table" || len(rows) != 1 {
			t.Fatalf("%s %v", typ, obj)
		}
		if cols, ok := obj["columnDefinitions"]; !ok || cols != nil {
			t.Errorf("the second Table has columnDefinitions %v, want null", cols)
		}
	})

	t.Run("PartialObjectMetadata", func(t *testing.T) {
		w := ts.watch(t, "allowWatchBookmarks=true", partialV1)
		typ, obj := w.event()
		if typ != "ADDED" || obj["kind"] != "PartialObjectMetadata" || obj["spec"] != nil {
			t.Errorf("%s %v", typ, obj)
		}
		// A metadata-only client decodes every event object as
		// PartialObjectMetadata, bookmarks included.
		typ, obj = w.event()
		if typ != "BOOKMARK" || obj["kind"] != "PartialObjectMetadata" || obj["apiVersion"] != "meta.k8s.io/v1" || path(obj, "metadata.resourceVersion") == nil {
			t.Errorf("%s %v, want a PartialObjectMetadata BOOKMARK", typ, obj)
		}
	})

	t.Run("YAML cannot stream", func(t *testing.T) {
		resp, b := ts.do(t, req{method: "GET", path: ns + "?watch=true", accept: "application/yaml"})
		wantStatus(t, resp, b, 406, meta.StatusReasonNotAcceptable,
			"only the following media types are accepted: application/json, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io")
	})
}
