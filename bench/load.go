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
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The benchmark's objects: Flunders of wardle.example.com/v1beta1 in the
// default namespace, which both servers serve.
const (
	namespace  = "default"
	collection = "/apis/wardle.example.com/v1beta1/namespaces/" + namespace + "/flunders"
)

// objectType is a resource of Flunder-shaped objects (spec.flunderReference
// and spec.referenceType) in the default namespace: wardle's Flunders, or
// the CRD mode's custom resources of the same shape.
type objectType struct {
	apiVersion, kind string
	collection       string // the default namespace's collection path
	// stored is where the objects are in etcd, below the server's prefix.
	stored string
	// setup, if not nil, runs on a server once it is ready, before the
	// first request for the objects, and says how long the server took to
	// serve them (the CRD mode: from creating the CRD).
	setup func(ctx context.Context, c *apiClient) (setupTimes, error)
}

// flunders are the Flunders both wardle and the sample-apiserver serve.
var flunders = objectType{
	apiVersion: "wardle.example.com/v1beta1", kind: "Flunder",
	collection: collection, stored: "/wardle.example.com/flunders/",
}

// apiClient is the load generator's connection to one API server: plain
// net/http over HTTP/2 with the benchmark's client certificate, sending
// pre-encoded bodies, so that it costs both servers' runs the same.
type apiClient struct {
	base string
	http *http.Client
	tr   *http.Transport
	// identity asks for responses as they are (-identity) rather than
	// gzip-compressed.
	identity bool
}

func newAPIClient(base string, tlsConf *tls.Config) *apiClient {
	tr := &http.Transport{
		TLSClientConfig:     tlsConf.Clone(),
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		// send asks for gzip and decompresses itself, to count the bytes
		// on the wire.
		DisableCompression: true,
	}
	return &apiClient{base: base, tr: tr, http: &http.Client{Transport: tr}}
}

// close drops the client's connections.
func (c *apiClient) close() { c.tr.CloseIdleConnections() }

// statusError is a response with an unexpected status.
type statusError struct {
	method, path string
	code         int
	body         string
}

func (e *statusError) Error() string {
	body := e.body
	if len(body) > 300 {
		body = body[:300] + "..."
	}
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.method, e.path, e.code, strings.TrimSpace(body))
}

// Content types of the requests' bodies.
const (
	jsonType = "application/json"
	// applyType is server-side apply's; the JSON bodies are YAML too.
	applyType = "application/apply-patch+yaml"
)

// do sends one request, with a JSON body if any, and reads the whole
// response into buf (reset first). A status other than want is an error.
func (c *apiClient) do(ctx context.Context, method, path string, body []byte, want int, buf *bytes.Buffer) error {
	_, err := c.send(ctx, method, path, jsonType, body, want, buf)
	return err
}

// send is do with a body of contentType; it also returns the size of the
// response as it came over the wire, compressed or not.
//
// It asks for gzip as Go's transport does by itself (and so client-go and
// kubectl), and as the benchmark's client always did: both servers
// compress responses over 128 KiB for it. It decompresses here rather than
// in the transport only to count the bytes on the wire. With identity set
// it asks for no compression, and neither server compresses.
func (c *apiClient) send(ctx context.Context, method, path, contentType string, body []byte, want int, buf *bytes.Buffer) (wire int, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if c.identity {
		req.Header.Set("Accept-Encoding", "identity")
	} else {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	counted := &countingReader{r: resp.Body}
	var from io.Reader = counted
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(counted)
		if err != nil {
			return 0, fmt.Errorf("%s %s: reading the gzipped response: %w", method, path, err)
		}
		from = zr
	}
	buf.Reset()
	if _, err := buf.ReadFrom(from); err != nil {
		return 0, fmt.Errorf("%s %s: reading the response: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return 0, &statusError{method: method, path: path, code: resp.StatusCode, body: buf.String()}
	}
	if resp.ProtoMajor != 2 {
		return 0, fmt.Errorf("%s %s: served over %s, want HTTP/2", method, path, resp.Proto)
	}
	return counted.n, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// flunderName is the name of the i-th benchmark object.
func flunderName(i int) string { return fmt.Sprintf("flunder-%05d", i) }

// createBody is the JSON of the i-th object, as both servers accept it.
func (t objectType) createBody(name string, i int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":%q,"kind":%q,`+
		`"metadata":{"name":%q,"namespace":%q,"labels":{"app":"bench","index":"%d"}},`+
		`"spec":{"flunderReference":"flunder-ref-%05d","referenceType":"Flunder"}}`, t.apiVersion, t.kind, name, namespace, i, i)
}

// updateBody is the i-th object with a changed spec and a label more, at
// resourceVersion rv (Flunders refuse unconditional updates).
func (t objectType) updateBody(name string, i int, rv string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":%q,"kind":%q,`+
		`"metadata":{"name":%q,"namespace":%q,"resourceVersion":%q,"labels":{"app":"bench","index":"%d","updated":"true"}},`+
		`"spec":{"flunderReference":"flunder-updated-%05d","referenceType":"Flunder"}}`, t.apiVersion, t.kind, name, namespace, rv, i, i)
}

// applyPath is the server-side apply of the named Flunder as the manager
// "bench". force: the Flunder's create and update made the load
// generator's Update manager own every field, so applying a new value
// conflicts without it (409), on both servers.
func (t objectType) applyPath(name string) string {
	return t.collection + "/" + name + "?fieldManager=bench&force=true"
}

// applyBody is the server-side apply configuration of the i-th Flunder:
// its identity and one spec field, changed from what updateBody set.
func (t objectType) applyBody(name string, i int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":%q,"kind":%q,`+
		`"metadata":{"name":%q,"namespace":%q},"spec":{"flunderReference":%q}}`, t.apiVersion, t.kind, name, namespace, appliedReference(i))
}

// appliedReference is the spec.flunderReference applyBody sets.
func appliedReference(i int) string { return fmt.Sprintf("flunder-applied-%05d", i) }

// checkApplied checks that a Flunder as served carries what the apply phase
// did: the applied spec field, and a managedFields entry of the manager
// "bench" with operation Apply; so that both servers are known to have done
// the same work.
func checkApplied(body []byte, i int) error {
	var f struct {
		Metadata struct {
			Name          string `json:"name"`
			ManagedFields []struct {
				Manager   string `json:"manager"`
				Operation string `json:"operation"`
			} `json:"managedFields"`
		} `json:"metadata"`
		Spec struct {
			FlunderReference string `json:"flunderReference"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(body, &f); err != nil {
		return fmt.Errorf("decoding the applied Flunder: %w", err)
	}
	if want := appliedReference(i); f.Spec.FlunderReference != want {
		return fmt.Errorf("%s: spec.flunderReference %q after apply, want %q", f.Metadata.Name, f.Spec.FlunderReference, want)
	}
	for _, m := range f.Metadata.ManagedFields {
		if m.Manager == "bench" && m.Operation == "Apply" {
			return nil
		}
	}
	return fmt.Errorf("%s: no managedFields entry of manager bench, operation Apply, after apply: %+v", f.Metadata.Name, f.Metadata.ManagedFields)
}

// objectMeta is the part of an object the client reads.
type objectMeta struct {
	Metadata struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// listMeta reads a list's metadata (resourceVersion, continue) without
// decoding its items when, as both servers write it, metadata comes
// first.
func listMeta(body []byte) (rv, cont string, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", "", fmt.Errorf("list: not a JSON object (%v)", err)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", "", fmt.Errorf("list: %w", err)
		}
		key, _ := t.(string)
		if key != "metadata" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", "", fmt.Errorf("list: %s: %w", key, err)
			}
			continue
		}
		var m struct {
			ResourceVersion string `json:"resourceVersion"`
			Continue        string `json:"continue"`
		}
		if err := dec.Decode(&m); err != nil {
			return "", "", fmt.Errorf("list metadata: %w", err)
		}
		return m.ResourceVersion, m.Continue, nil
	}
	return "", "", errors.New("list: no metadata")
}

// countItems counts a list's items.
func countItems(body []byte) (int, error) {
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return 0, fmt.Errorf("decoding the list: %w", err)
	}
	return len(l.Items), nil
}

// forEach calls op(worker, i) for every i in [0, n) from workers
// goroutines and returns how long they took. Every goroutine has ended
// when it returns; the first error stops the others.
func forEach(ctx context.Context, n, workers int, op func(ctx context.Context, worker, i int) error) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	started := time.Now()
	for w := range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := op(ctx, w, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(started)
	if first != nil {
		return elapsed, first
	}
	return elapsed, ctx.Err()
}

// watchEvent is the part of a watch event the client reads.
type watchEvent struct {
	Type   string     `json:"type"`
	Object objectMeta `json:"object"`
}

// watchLatency opens a watch on the objects of t from resourceVersion rv,
// then creates events of them one after another and measures, for each, the
// time from sending its create to receiving its ADDED event.
func (c *apiClient) watchLatency(ctx context.Context, t objectType, rv string, events int) ([]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	path := t.collection + "?watch=true&resourceVersion=" + url.QueryEscape(rv)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		return nil, &statusError{method: "GET", path: path, code: resp.StatusCode, body: string(b)}
	}

	arrived := make([]atomic.Int64, events) // unix nanoseconds
	var seen atomic.Int64
	all := make(chan struct{})
	readerDone := make(chan error, 1)
	go func() {
		dec := json.NewDecoder(resp.Body)
		for {
			var ev watchEvent
			if err := dec.Decode(&ev); err != nil {
				if ctx.Err() != nil {
					err = nil
				}
				readerDone <- err
				return
			}
			now := time.Now().UnixNano()
			i, ok := watchIndex(ev.Object.Metadata.Name)
			if ev.Type != "ADDED" || !ok || i >= events || arrived[i].Load() != 0 {
				continue
			}
			arrived[i].Store(now)
			if seen.Add(1) == int64(events) {
				close(all)
			}
		}
	}()

	sent := make([]int64, events)
	var buf bytes.Buffer
	var createErr error
	for i := range events {
		name := watchName(i)
		body := t.createBody(name, i)
		sent[i] = time.Now().UnixNano()
		if err := c.do(ctx, http.MethodPost, t.collection, body, http.StatusCreated, &buf); err != nil {
			createErr = err
			break
		}
	}
	var waitErr error
	if createErr == nil {
		select {
		case <-all:
		case err := <-readerDone:
			readerDone <- err
			waitErr = fmt.Errorf("watch ended after %d of %d events: %v", seen.Load(), events, err)
		case <-time.After(60 * time.Second):
			waitErr = fmt.Errorf("watch: %d of %d events within 60s of the last create", seen.Load(), events)
		}
	}
	cancel()
	resp.Body.Close()
	<-readerDone
	if createErr != nil {
		return nil, createErr
	}
	if waitErr != nil {
		return nil, waitErr
	}
	lat := make([]time.Duration, events)
	for i := range lat {
		lat[i] = time.Duration(arrived[i].Load() - sent[i])
	}
	return lat, nil
}

// watchName is the name of the i-th object the watch phase creates.
func watchName(i int) string { return fmt.Sprintf("watch-%05d", i) }

// watchIndex is the inverse of watchName.
func watchIndex(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "watch-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil && i >= 0
}
