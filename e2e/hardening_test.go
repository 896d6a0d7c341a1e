package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// tlsClient is an HTTP client for w that trusts its serving certificate,
// acting as the admin (client certificate) or, with anonymous, presenting
// no credentials. It counts the connections it dials; HTTP/2 when h2.
func tlsClient(t *testing.T, w *Wardle, anonymous, h2 bool) (*http.Client, *atomic.Int64) {
	t.Helper()
	cfg := w.RESTConfig()
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg = tlsCfg.Clone()
	if anonymous {
		tlsCfg.Certificates, tlsCfg.GetClientCertificate = nil, nil
	}
	tlsCfg.NextProtos = []string{"http/1.1"}
	if h2 {
		tlsCfg.NextProtos = []string{"h2"}
	}
	var dials atomic.Int64
	dialer := &tls.Dialer{Config: tlsCfg}
	tr := &http.Transport{
		TLSClientConfig:   tlsCfg,
		ForceAttemptHTTP2: h2,
		// Ask for gzip only explicitly, and see what the server sent.
		DisableCompression: true,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
	}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}, &dials
}

// get returns the code, body and protocol of a GET of path, with an
// Authorization header when authorization is set.
func get(t *testing.T, c *http.Client, w *Wardle, path, authorization string) (int, string, string) {
	t.Helper()
	h := http.Header{}
	if authorization != "" {
		h.Set("Authorization", authorization)
	}
	resp, b := getWith(t, c, w, path, h)
	return resp.StatusCode, string(b), resp.Proto
}

// getWith GETs path with the headers h and returns the response with its
// body read (as sent: not decompressed).
func getWith(t *testing.T, c *http.Client, w *Wardle, path string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", w.RESTConfig().Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp, b
}

// TestHealthDetailsWithheld: the health endpoints are public, so a failing
// check's error is "reason withheld" there, verbose or not, as
// kube-apiserver prints it; the error itself is served at the check's own
// path, to a user allowed to read it. Readiness fails here because the
// server is shutting down (and waits --shutdown-delay-duration).
func TestHealthDetailsWithheld(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory", "--anonymous-auth=false", "--shutdown-delay-duration=20s")
	anonymous, _ := tlsClient(t, w, true, false)
	admin, _ := tlsClient(t, w, false, false)
	if code, body, _ := get(t, anonymous, w, "/readyz?verbose", ""); code != 200 || !strings.HasSuffix(body, "[+]shutdown ok\nreadyz check passed\n") {
		t.Fatalf("/readyz?verbose before shutdown: %d %q", code, body)
	}

	w.Signal(syscall.SIGTERM)
	var body string
	waitUntil(t, 10*time.Second, "readyz to fail", func() bool {
		var code int
		code, body, _ = get(t, anonymous, w, "/readyz?verbose", "")
		return code == 500
	})
	if !strings.Contains(body, "[-]shutdown failed: reason withheld\n") || !strings.HasSuffix(body, "readyz check failed\n") ||
		strings.Contains(body, "shutting down") {
		t.Errorf("anonymous /readyz?verbose:\n%s", body)
	}
	if code, body, _ := get(t, admin, w, "/readyz?verbose", ""); code != 500 || !strings.Contains(body, "[-]shutdown failed: reason withheld\n") {
		t.Errorf("admin /readyz?verbose: %d\n%s", code, body)
	}
	if code, body, _ := get(t, anonymous, w, "/readyz/shutdown", ""); code != 401 || strings.Contains(body, "shutting down") {
		t.Errorf("anonymous /readyz/shutdown: %d %s", code, body)
	}
	if code, body, _ := get(t, admin, w, "/readyz/shutdown", ""); code != 500 || body != "internal server error: process is shutting down\n" {
		t.Errorf("admin /readyz/shutdown: %d %q", code, body)
	}
	if err, ok := w.Wait(60 * time.Second); !ok || err != nil {
		t.Errorf("exit after shutdown: %v (exited: %v)", err, ok)
	}
}

// TestUnauthenticatedHTTP2Closed: over HTTP/2 the server closes the
// connection of a request that failed authentication, or was served to an
// anonymous caller, as kube-apiserver does (CVE-2023-44487): each such
// request costs its client a new connection. The admin's requests share
// one.
func TestUnauthenticatedHTTP2Closed(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")
	const requests = 5
	for _, tc := range []struct {
		name, path, authorization string
		anonymous                 bool
		code                      int
		closes                    bool
	}{
		{"admin", "/apis", "", false, 200, false},
		{"invalid token", "/apis", "Bearer not-a-token", true, 401, true},
		{"anonymous on a public path", "/healthz", "", true, 200, true},
		{"no credentials", "/apis/wardle.example.com/v1beta1/flunders", "", true, 401, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, dials := tlsClient(t, w, tc.anonymous, true)
			for range requests {
				code, body, proto := get(t, c, w, tc.path, tc.authorization)
				if code != tc.code || proto != "HTTP/2.0" {
					t.Fatalf("%d over %s, want %d over HTTP/2.0: %s", code, proto, tc.code, body)
				}
			}
			switch n := dials.Load(); {
			case !tc.closes && n != 1:
				t.Errorf("%d requests took %d connections, want 1", requests, n)
			case tc.closes && n < requests:
				t.Errorf("%d requests took %d connections, want one each", requests, n)
			}
		})
	}
}

// TestNoCoreGroup: a server without the core group answers /api 404, as
// k8s.io/sample-apiserver does, not an empty version list; client-go's
// discovery (and so kubectl) takes that as "no legacy resources".
func TestNoCoreGroup(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")
	errOut := w.KubectlFail("get", "--raw", "/api")
	if !strings.Contains(errOut, "Error from server (NotFound): the server could not find the requested resource") {
		t.Errorf("kubectl get --raw /api: %s", errOut)
	}
	d, err := discovery.NewDiscoveryClientForConfig(w.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	groups, resources, err := d.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	found := false
	for _, l := range resources {
		for _, r := range l.APIResources {
			found = found || (l.GroupVersion == "wardle.example.com/v1beta1" && r.Name == "flunders")
		}
	}
	for _, g := range groups {
		if g.Name == "" {
			t.Errorf("discovery lists a core group: %+v", g)
		}
	}
	if !found {
		t.Errorf("discovery lacks flunders: %v", resources)
	}
	if out := w.Kubectl("api-resources", "--api-group=wardle.example.com", "-o", "name"); !strings.Contains(out, "flunders.wardle.example.com") {
		t.Errorf("kubectl api-resources: %s", out)
	}
}

// TestLargeListsCompressed: a LIST larger than 128 KiB is gzip-compressed
// for a client that accepts gzip, as kube-apiserver's
// APIResponseCompression does; client-go and kubectl ask for it and read it
// unseen. A watch is not compressed.
func TestLargeListsCompressed(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")
	const n = 600 // ~220 KiB of Flunders
	res := w.Dynamic().Resource(flundersGVR).Namespace("gz")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for worker := range 8 {
		wg.Go(func() {
			for i := worker; i < n; i += 8 {
				_, err := res.Create(ctx, newFlunder("gz", fmt.Sprintf("flunder-%04d", i), strings.Repeat("ref", 20)), metav1.CreateOptions{})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	c, _ := tlsClient(t, w, false, true)
	const path = "/apis/wardle.example.com/v1beta1/namespaces/gz/flunders"
	resp, body := getWith(t, c, w, path, http.Header{"Accept-Encoding": {"gzip"}})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("%d, Content-Encoding %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Encoding"), len(body))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.NewDecoder(zr).Decode(&list); err != nil || len(list.Items) != n {
		t.Fatalf("decompressed list: %d items, %v", len(list.Items), err)
	}
	plainResp, plain := getWith(t, c, w, path, http.Header{})
	if plainResp.Header.Get("Content-Encoding") != "" || len(plain) <= 128<<10 {
		t.Errorf("without Accept-Encoding: Content-Encoding %q, %d bytes", plainResp.Header.Get("Content-Encoding"), len(plain))
	}
	t.Logf("LIST of %d: %d bytes, %d gzip-compressed (%.1fx smaller)", n, len(plain), len(body), float64(len(plain))/float64(len(body)))

	// client-go and kubectl ask for gzip and decompress.
	l, err := res.List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != n {
		t.Errorf("client-go list: %v", err)
	}
	if out := w.Kubectl("get", "flunders", "-n", "gz", "-o", "name"); strings.Count(out, "\n") != n {
		t.Errorf("kubectl get flunders: %d lines", strings.Count(out, "\n"))
	}

	// A watch's events go out as they happen, never compressed.
	wresp, events := getWith(t, c, w, path+"?watch=true&resourceVersion=0&timeoutSeconds=2", http.Header{"Accept-Encoding": {"gzip"}})
	if wresp.StatusCode != 200 || wresp.Header.Get("Content-Encoding") != "" || strings.Count(string(events), `"type":"ADDED"`) != n {
		t.Errorf("watch: %d, Content-Encoding %q, %d ADDED events", wresp.StatusCode, wresp.Header.Get("Content-Encoding"), strings.Count(string(events), `"type":"ADDED"`))
	}
}
