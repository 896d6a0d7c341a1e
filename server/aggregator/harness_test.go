package aggregator_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/aggregator"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// backend is a delegated API server stand-in: a TLS server for
// api.ns.svc that records what it was sent and serves test.example.com/v1
// discovery, widgets (with a watch that streams on demand), an upgrade
// and OpenAPI documents.
type backend struct {
	t      *testing.T
	ca     *certs.CA
	srv    *httptest.Server
	addr   string
	events chan string // each value is written to an open watch, then flushed

	mu        sync.Mutex
	requests  []*http.Request
	resources string // the extra resource its discovery lists, if any
}

func newBackend(t *testing.T, ca *certs.CA) *backend {
	t.Helper()
	b := &backend{t: t, ca: ca, events: make(chan string)}
	b.start("127.0.0.1:0")
	return b
}

// start serves on addr (a fixed one, to come back after stop).
func (b *backend) start(addr string) {
	b.t.Helper()
	pair, err := b.ca.IssueServing([]string{"api.ns.svc"}, time.Hour)
	if err != nil {
		b.t.Fatal(err)
	}
	cert, err := pair.TLSCertificate()
	if err != nil {
		b.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		b.t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(b.serve))
	srv.Listener.Close()
	srv.Listener = ln
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes the aggregator refuses
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	b.srv, b.addr = srv, ln.Addr().String()
	b.t.Cleanup(srv.Close)
}

func (b *backend) stop() {
	b.srv.CloseClientConnections()
	b.srv.Close()
}

func (b *backend) last(pathPrefix string) *http.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.requests) - 1; i >= 0; i-- {
		if strings.HasPrefix(b.requests[i].URL.Path, pathPrefix) {
			return b.requests[i]
		}
	}
	return nil
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.requests = append(b.requests, r.Clone(context.Background()))
	extra := b.resources
	b.mu.Unlock()
	switch p := r.URL.Path; {
	case p == "/apis/test.example.com/v1":
		res := `{"name":"widgets","singularName":"widget","namespaced":true,"kind":"Widget","verbs":["get","list","watch"]},` +
			`{"name":"widgets/status","singularName":"","namespaced":true,"kind":"Widget","verbs":["get","patch"]}`
		if extra != "" {
			res += `,{"name":"` + extra + `","singularName":"","namespaced":false,"kind":"Gadget","verbs":["get"]}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"test.example.com/v1","resources":[%s]}`, res)
	case p == "/apis/test.example.com/v1/namespaces/ns/widgets" && r.URL.Query().Get("watch") == "true":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case ev := <-b.events:
				io.WriteString(w, ev+"\n")
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	case p == "/apis/test.example.com/v1/namespaces/ns/widgets/w/exec":
		if r.Header.Get("Upgrade") != "echo" || r.ProtoMajor != 1 {
			http.Error(w, "want an HTTP/1.1 upgrade to echo", http.StatusBadRequest)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		rw.Flush()
		line, _ := rw.ReadString('\n')
		rw.WriteString("echo: " + line)
		rw.Flush()
	case strings.HasPrefix(p, "/apis/test.example.com/v1/"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"WidgetList","apiVersion":"test.example.com/v1","metadata":{},"items":[]}`)
	case p == "/openapi/v2":
		io.WriteString(w, `{"swagger":"2.0","info":{"title":"backend","version":"v1"},"paths":{`+
			`"/apis/test.example.com/v1/widgets":{"get":{"operationId":"listWidgets","responses":{"200":{"description":"OK"}}}},`+
			`"/apis/other.example.com/v1/things":{"get":{"operationId":"listThings","responses":{"200":{"description":"OK"}}}}},`+
			`"definitions":{"com.example.test.v1.Widget":{"type":"object"}}}`)
	case p == "/openapi/v3":
		io.WriteString(w, `{"paths":{"apis/test.example.com/v1":{"serverRelativeURL":"/openapi/v3/apis/test.example.com/v1?hash=ABC"}}}`)
	case p == "/openapi/v3/apis/test.example.com/v1":
		io.WriteString(w, `{"openapi":"3.0.0","info":{"title":"backend","version":"v1"},"paths":{"/apis/test.example.com/v1/widgets":{}}}`)
	default:
		http.NotFound(w, r)
	}
}

// users are the bearer tokens the aggregator under test knows.
var users = map[string]authn.User{
	"alice-token": {Name: "alice", UID: "u-1", Groups: []string{"devs"},
		Extra: map[string][]string{"scopes": {"read", "write"}, "example.com/team%": {"blue"}}},
}

// harness is an aggregator, listening on loopback, in front of a local
// group (local.example.com), with a front-proxy client certificate.
type harness struct {
	t       *testing.T
	agg     *aggregator.Aggregator
	url     string
	client  *http.Client // speaks HTTP/2 to the aggregator
	ca      *certs.CA    // signs the backends' serving certificates
	proxyCA *certs.CA
	cancel  context.CancelFunc
}

type localThing struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
}

func newHarness(t *testing.T, resolver aggregator.ServiceResolver) *harness {
	t.Helper()
	ca, err := certs.NewCA("backend-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	proxyCA, err := certs.NewCA("front-proxy-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	proxyPair, err := proxyCA.IssueClient("front-proxy-client", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	proxyCert, err := proxyPair.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })

	// The delegate: a server with one local group.
	dcfg := server.NewConfig()
	dcfg.Logger = slog.New(slog.DiscardHandler)
	dcfg.SecureServing.Certificate = &tls.Certificate{}
	dc, err := dcfg.Complete()
	if err != nil {
		t.Fatal(err)
	}
	delegate, err := dc.New("local", server.NewEmptyDelegate())
	if err != nil {
		t.Fatal(err)
	}
	things := registry.MustNewStore(registry.Options[*localThing]{
		Resource: meta.GroupResource{Group: "local.example.com", Resource: "things"}, Kind: "Thing",
		StorageVersion: "v1", Strategy: registry.DefaultStrategy[*localThing]{}, Storage: mem,
	})
	if err := delegate.InstallAPIGroup(server.NewAPIGroupInfo("local.example.com").AddVersion("v1", registry.Serve(things))); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.NewConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.SecureServing.Listener = ln
	cfg.Storage = storage.Shared(mem)
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.Authenticator = authn.Func(func(r *http.Request) (*authn.Response, bool, error) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		u, ok := users[tok]
		if !ok {
			return nil, false, nil
		}
		return &authn.Response{User: u}, true, nil
	})
	c, err := cfg.Complete()
	if err != nil {
		t.Fatal(err)
	}
	agg, err := aggregator.New(c, delegate, aggregator.Config{
		ProxyClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &proxyCert, nil },
		ServiceResolver:        resolver,
		ProbeInterval:          200 * time.Millisecond,
		ProbeTimeout:           2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	prepared := agg.GenericServer.PrepareRun()
	go func() { done <- prepared.Run(ctx) }()
	h := &harness{t: t, agg: agg, url: "https://" + ln.Addr().String(), ca: ca, proxyCA: proxyCA, cancel: cancel,
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		stopped := make(chan struct{})
		go func() { agg.Wait(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Error("the aggregator's controllers did not stop")
		}
	})
	h.waitReady()
	return h
}

func (h *harness) waitReady() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := h.client.Get(h.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("not ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// do sends a request as alice.
func (h *harness) do(method, path string, body io.Reader, header http.Header) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer alice-token")
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

func (h *harness) get(path string) (int, string) {
	h.t.Helper()
	resp := h.do("GET", path, nil, nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// register creates the APIService of test.example.com/v1 at ns/api.
func (h *harness) register(caBundle []byte) {
	h.t.Helper()
	port := int32(443)
	obj := &aggregator.APIService{
		ObjectMeta: meta.ObjectMeta{Name: "v1.test.example.com"},
		Spec: aggregator.APIServiceSpec{Group: "test.example.com", Version: "v1", CABundle: caBundle,
			Service:              &aggregator.ServiceReference{Namespace: "ns", Name: "api", Port: &port},
			GroupPriorityMinimum: 2000, VersionPriority: 10},
	}
	body, _ := json.Marshal(obj)
	resp := h.do("POST", "/apis/apiregistration.k8s.io/v1/apiservices", strings.NewReader(string(body)), http.Header{"Content-Type": {"application/json"}})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		h.t.Fatalf("creating the APIService: %d %s", resp.StatusCode, b)
	}
}

// condition returns the Available condition of an APIService as stored.
func (h *harness) condition(name string) *aggregator.APIServiceCondition {
	h.t.Helper()
	s, _, err := h.agg.Store.Get(context.Background(), "", name, meta.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return s.Status.Condition(aggregator.Available)
}

// waitCondition waits until name's Available condition has status and
// reason, and returns how long it took.
func (h *harness) waitCondition(name string, status aggregator.ConditionStatus, reason string, within time.Duration) time.Duration {
	h.t.Helper()
	start := time.Now()
	for {
		c := h.condition(name)
		if c != nil && c.Status == status && c.Reason == reason {
			return time.Since(start)
		}
		if time.Since(start) > within {
			h.t.Fatalf("%s: Available is %+v after %v, want %s (%s)", name, c, within, status, reason)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// upgrade opens an HTTP/1.1 connection to the aggregator, asks for an
// upgrade to the backend's echo protocol and returns what the backend
// echoes of line.
func (h *harness) upgrade(line string) (string, error) {
	conn, err := tls.Dial("tcp", strings.TrimPrefix(h.url, "https://"), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST /apis/test.example.com/v1/namespaces/ns/widgets/w/exec HTTP/1.1\r\nHost: aggregator\r\n"+
		"Authorization: Bearer alice-token\r\nConnection: Upgrade\r\nUpgrade: echo\r\nContent-Length: 0\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	fmt.Fprint(conn, line+"\n")
	got, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(got), nil
}

// verifyProxy checks the front-proxy certificate a backend request came
// with, as a delegated server would.
func verifyProxy(r *http.Request, proxyCA *certs.CA) error {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return errors.New("no client certificate")
	}
	pool := x509.NewCertPool()
	pool.AddCert(proxyCA.Cert)
	_, err := r.TLS.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err
}

func pool(ca *certs.CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

func newCA(name string) (*certs.CA, error) { return certs.NewCA(name, time.Hour) }

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// requestsTo lists the requests the backend got under pathPrefix.
func (b *backend) requestsTo(pathPrefix string) []*http.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*http.Request
	for _, r := range b.requests {
		if strings.HasPrefix(r.URL.Path, pathPrefix) {
			out = append(out, r)
		}
	}
	return out
}

// testResolver is a StaticResolver tests may change while it is used.
type testResolver struct {
	mu sync.Mutex
	m  aggregator.StaticResolver
}

func (r *testResolver) set(service, hostPort string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[service] = hostPort
}

func (r *testResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m.ResolveEndpoint(namespace, name, port)
}
