package delegation_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authn/delegation"
	"github.com/apikit-dev/apikit/certs"
)

// front is a kube-apiserver stand-in serving the ConfigMap and its watch.
type front struct {
	srv    *httptest.Server
	mu     sync.Mutex
	status int               // of the GET; 200 serves data
	data   map[string]string // the ConfigMap's
	rv     int
	events chan string // watch events, pushed by the test
	token  string      // the bearer token requests must carry
	gets   int
}

func newFront(t *testing.T, data map[string]string) *front {
	t.Helper()
	f := &front{status: 200, data: data, rv: 7, events: make(chan string, 10), token: "front-token"}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *front) configMap() string {
	b, _ := json.Marshal(map[string]any{"kind": "ConfigMap", "apiVersion": "v1",
		"metadata": map[string]any{"name": delegation.Name, "namespace": delegation.Namespace, "resourceVersion": strconv.Itoa(f.rv)},
		"data":     f.data})
	return string(b)
}

// update changes the ConfigMap and sends the watch event.
func (f *front) update(data map[string]string) {
	f.mu.Lock()
	f.data, f.rv = data, f.rv+1
	ev := `{"type":"MODIFIED","object":` + f.configMap() + `}`
	f.mu.Unlock()
	f.events <- ev
}

func (f *front) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	status, body := f.status, f.configMap()
	if r.URL.Path == "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication" {
		f.gets++
	}
	f.mu.Unlock()
	switch {
	case r.URL.Path == "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication":
		w.WriteHeader(status)
		if status == 200 {
			io.WriteString(w, body)
		}
	case r.URL.Path == "/api/v1/namespaces/kube-system/configmaps" && r.URL.Query().Get("watch") == "true":
		if r.URL.Query().Get("fieldSelector") != "metadata.name=extension-apiserver-authentication" {
			http.Error(w, "no field selector", http.StatusBadRequest)
			return
		}
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for {
			select {
			case ev := <-f.events:
				io.WriteString(w, ev+"\n")
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	default:
		http.NotFound(w, r)
	}
}

func (f *front) kubeconfig() certs.Kubeconfig {
	return certs.Kubeconfig{Server: f.srv.URL, CAPEM: pemOf(f.srv), Token: f.token}
}

func pemOf(s *httptest.Server) []byte {
	return certsPEM(s.Certificate().Raw)
}

func newCA(t *testing.T, name string) *certs.CA {
	t.Helper()
	ca, err := certs.NewCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// proxyRequest is a request from a front proxy with cert, naming alice.
func proxyRequest(t *testing.T, ca *certs.CA, cn string) *http.Request {
	t.Helper()
	pair, err := ca.IssueClient(cn, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pair.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := parse(cert)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/apis", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: leaf}
	r.Header.Set("X-Remote-User", "alice")
	r.Header.Set("X-Remote-Group", "devs")
	r.Header.Set("X-Custom-User", "carol")
	return r
}

func TestParse(t *testing.T) {
	ca := newCA(t, "front-proxy-ca")
	info, err := delegation.Parse(map[string]string{
		delegation.KeyRequestHeaderCA:     string(ca.CertPEM),
		delegation.KeyAllowedNames:        `["front-proxy-client"]`,
		delegation.KeyUsernameHeaders:     `["X-Remote-User"]`,
		delegation.KeyGroupHeaders:        `["X-Remote-Group"]`,
		delegation.KeyExtraHeaderPrefixes: `["X-Remote-Extra-"]`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.ClientCA) != 0 || string(info.RequestHeaderCA) != string(ca.CertPEM) || info.AllowedNames[0] != "front-proxy-client" ||
		info.UsernameHeaders[0] != "X-Remote-User" || len(info.UIDHeaders) != 0 {
		t.Errorf("%+v", info)
	}
	for key, bad := range map[string]string{
		delegation.KeyAllowedNames: `front-proxy-client`,
		delegation.KeyClientCA:     "not PEM",
	} {
		if _, err := delegation.Parse(map[string]string{key: bad}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%q: %v", key, bad, err)
		}
	}
}

func TestFetchAndWatch(t *testing.T) {
	proxyCA, clientCA, otherCA := newCA(t, "front-proxy-ca"), newCA(t, "client-ca"), newCA(t, "other-proxy-ca")
	f := newFront(t, map[string]string{
		delegation.KeyClientCA:        string(clientCA.CertPEM),
		delegation.KeyRequestHeaderCA: string(proxyCA.CertPEM),
		delegation.KeyAllowedNames:    `["front-proxy-client"]`,
		delegation.KeyUsernameHeaders: `["X-Remote-User"]`,
		delegation.KeyGroupHeaders:    `["X-Remote-Group"]`,
	})
	src, err := delegation.New(f.kubeconfig(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	rh := src.RequestHeader()
	// Before anything is read: nobody is trusted, headers are stripped.
	r := proxyRequest(t, proxyCA, "front-proxy-client")
	if _, ok, _ := rh.AuthenticateRequest(r); ok || r.Header.Get("X-Remote-User") != "" {
		t.Errorf("before the lookup: ok=%v, headers %v", ok, r.Header)
	}
	rv, err := src.Fetch(context.Background())
	if err != nil || rv != "7" {
		t.Fatalf("Fetch: %q %v", rv, err)
	}
	resp, ok, err := rh.AuthenticateRequest(proxyRequest(t, proxyCA, "front-proxy-client"))
	if !ok || err != nil || resp.User.Name != "alice" || resp.User.Groups[0] != "devs" {
		t.Fatalf("through the front proxy: %v %v %+v", ok, err, resp)
	}
	if _, ok, err := rh.AuthenticateRequest(proxyRequest(t, proxyCA, "someone-else")); ok || err == nil {
		t.Errorf("a name not allowed: %v %v", ok, err)
	}

	// The client CA joins the server's own.
	own := newCA(t, "own")
	ownPool, _ := certs.PoolFromPEM(own.CertPEM)
	cas := src.ClientCA(authn.StaticCAs{Pool: ownPool})
	for _, ca := range []*certs.CA{own, clientCA} {
		if !trusts(t, cas, ca) {
			t.Errorf("the client CAs do not trust %s", ca.Cert.Subject.CommonName)
		}
	}
	if trusts(t, cas, proxyCA) {
		t.Error("the front proxy's CA verifies client certificates")
	}
	if p1, p2 := cas.ClientCAs(), cas.ClientCAs(); p1 != p2 {
		t.Error("the pool is rebuilt for every request")
	}

	// Changes arrive through the watch.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); src.Run(ctx, rv) }()
	defer func() { cancel(); <-done }()
	f.update(map[string]string{
		delegation.KeyRequestHeaderCA: string(otherCA.CertPEM),
		delegation.KeyAllowedNames:    `[]`,
		delegation.KeyUsernameHeaders: `["X-Custom-User"]`,
	})
	waitFor(t, "the new front proxy", func() bool {
		resp, ok, _ := rh.AuthenticateRequest(proxyRequest(t, otherCA, "any-name"))
		return ok && resp.User.Name == "carol"
	})
	if _, ok, _ := rh.AuthenticateRequest(proxyRequest(t, proxyCA, "front-proxy-client")); ok {
		t.Error("the old front proxy is still trusted")
	}
	if trusts(t, cas, clientCA) {
		t.Error("the removed client CA is still trusted")
	}
	if !trusts(t, cas, own) {
		t.Error("the server's own CA is no longer trusted")
	}
	// A watch that ends is followed by a read and a new watch.
	f.mu.Lock()
	gets := f.gets
	f.mu.Unlock()
	f.events <- `{"type":"ERROR","object":{"kind":"Status","code":410}}`
	waitFor(t, "a new read after the watch failed", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.gets > gets
	})
}

func TestFetchErrors(t *testing.T) {
	f := newFront(t, nil)
	src, err := delegation.New(f.kubeconfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for status, want := range map[int]error{404: delegation.ErrNotFound, 403: delegation.ErrForbidden} {
		f.mu.Lock()
		f.status = status
		f.mu.Unlock()
		if _, err := src.Fetch(context.Background()); !errors.Is(err, want) {
			t.Errorf("%d: %v", status, err)
		}
	}
	f.mu.Lock()
	f.status = 500
	f.mu.Unlock()
	if _, err := src.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("500: %v", err)
	}
	if _, ok := src.Info(); ok {
		t.Error("Info after failed reads")
	}
	if _, err := delegation.New(certs.Kubeconfig{Server: "not a url"}, nil); err == nil {
		t.Error("a kubeconfig without a URL")
	}
}

func trusts(t *testing.T, cas authn.CAProvider, ca *certs.CA) bool {
	t.Helper()
	pair, err := ca.IssueClient("someone", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := pair.TLSCertificate()
	leaf, _ := parse(cert)
	r := httptest.NewRequest("GET", "/", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: leaf}
	_, ok, _ := authn.NewX509(cas).AuthenticateRequest(r)
	return ok
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 5s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ExampleParse() {
	info, err := delegation.Parse(map[string]string{
		"requestheader-username-headers": `["X-Remote-User"]`,
		"requestheader-allowed-names":    `["front-proxy-client"]`,
	})
	fmt.Println(info.UsernameHeaders, info.AllowedNames, err)
	// Output: [X-Remote-User] [front-proxy-client] <nil>
}

func certsPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func parse(c tls.Certificate) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for _, der := range c.Certificate {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, err
		}
		out = append(out, cert)
	}
	return out, nil
}
