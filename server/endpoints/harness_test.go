package endpoints_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage/memory"
)

// Widget exercises every shape the decoder walks: nested structs, an
// inline embedded struct, slices, maps and pointers.
type Widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

type Common struct {
	Owner string `json:"owner,omitempty"`
}

type WidgetSpec struct {
	Common `json:",inline"`
	Size   int             `json:"size,omitempty"`
	Parts  []Part          `json:"parts,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	Named  map[string]Part `json:"named,omitempty"`
	Main   *Part           `json:"main,omitempty"`
	Tags   []string        `json:"tags,omitempty" patchStrategy:"merge"`
	Blob   []byte          `json:"blob,omitempty"`
	Free   map[string]any  `json:"free,omitempty"`
	Raw    json.RawMessage `json:"raw,omitempty"`
}

type Part struct {
	Name  string `json:"name"`
	Count int    `json:"count,omitempty"`
}

type WidgetStatus struct {
	Ready bool `json:"ready,omitempty"`
}

// Gadget is cluster-scoped.
type Gadget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Color           string `json:"color,omitempty"`
}

const (
	group = "test.example.com"
	gv    = "/apis/test.example.com/v1"
	ns    = "/apis/test.example.com/v1/namespaces/ns/widgets"
)

// testNow is the stores' clock.
var testNow = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// admissionLog records the admission calls the server makes.
type admissionLog struct {
	mu    sync.Mutex
	attrs []admission.Attributes
	// refuse, when set, is returned by Validate for objects of this name.
	refuse string
}

func (a *admissionLog) Handles(admission.Operation) bool { return true }

func (a *admissionLog) Admit(_ context.Context, attrs *admission.Attributes) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.attrs = append(a.attrs, *attrs)
	return nil
}

func (a *admissionLog) Validate(_ context.Context, attrs *admission.Attributes) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.attrs = append(a.attrs, *attrs)
	if a.refuse != "" && attrs.Name == a.refuse {
		return meta.NewForbidden(attrs.Resource.GroupResource(), attrs.Name, errString("refused by test admission"))
	}
	return nil
}

func (a *admissionLog) take() []admission.Attributes {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.attrs
	a.attrs = nil
	return out
}

type errString string

func (e errString) Error() string { return string(e) }

type testServer struct {
	*httptest.Server
	srv       *server.GenericServer
	widgets   *registry.Store[*Widget]
	mem       *memory.Store
	admission *admissionLog
}

func newTestServer(t testing.TB, mutate ...func(*server.Config)) *testServer {
	t.Helper()
	mem := memory.New(memory.WithBookmarkInterval(20*time.Millisecond), memory.WithCompactionInterval(0))
	t.Cleanup(func() { _ = mem.Close() })
	widgets, err := registry.NewStore(registry.Options[*Widget]{
		Resource:          meta.GroupResource{Group: group, Resource: "widgets"},
		Kind:              "Widget",
		ShortNames:        []string{"wd"},
		Categories:        []string{"all"},
		NamespaceScoped:   true,
		StorageVersion:    "v1",
		Strategy:          registry.DefaultStrategy[*Widget]{},
		Storage:           mem,
		StatusSubresource: true,
		Columns: []registry.Column[*Widget]{
			{Name: "Size", Type: "integer", Description: "How big.", Value: func(w *Widget) any { return int64(w.Spec.Size) }},
		},
		Now: func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	gadgets, err := registry.NewStore(registry.Options[*Gadget]{
		Resource:       meta.GroupResource{Group: group, Resource: "gadgets"},
		Kind:           "Gadget",
		StorageVersion: "v1",
		Strategy:       registry.DefaultStrategy[*Gadget]{},
		Storage:        mem,
		Now:            func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	adm := &admissionLog{}
	mutate = append([]func(*server.Config){func(c *server.Config) { c.Admission = admission.Chain{adm} }}, mutate...)
	srv, hs := serveGroup(t, server.NewAPIGroupInfo(group).AddVersion("v1", registry.Serve(widgets), registry.Serve(gadgets)), []string{"testers"}, mutate...)
	return &testServer{Server: hs, srv: srv, widgets: widgets, mem: mem, admission: adm}
}

// serveGroup runs info's group in a server of its own over plain HTTP
// (httptest), which takes every request for user "tester" in groups and
// discards its logs; mutate changes its config before Complete. Both stop
// when the test ends.
func serveGroup(t testing.TB, info *server.APIGroupInfo, groups []string, mutate ...func(*server.Config)) (*server.GenericServer, *httptest.Server) {
	t.Helper()
	cfg := server.NewConfig()
	cfg.SecureServing.Certificate = &tls.Certificate{} // served over plain HTTP here
	cfg.Authenticator = authn.Func(func(*http.Request) (*authn.Response, bool, error) {
		return &authn.Response{User: authn.User{Name: "tester", Groups: groups}}, true, nil
	})
	cfg.Logger = discardLogger()
	for _, m := range mutate {
		m(cfg)
	}
	completed, err := cfg.Complete()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := completed.New("test", server.NewEmptyDelegate())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.InstallAPIGroup(info); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler)
	t.Cleanup(hs.Close)
	return srv, hs
}

// req is one request to make.
type req struct {
	method, path string
	body         string
	contentType  string
	accept       string
	// acceptEncoding, when set, is sent, and the body is returned as the
	// server sent it (Go's transport decompresses only what it asked for).
	acceptEncoding string
}

// do makes the request and returns the response with its body read.
func (ts *testServer) do(t testing.TB, r req) (*http.Response, []byte) {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, ts.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	ct := r.contentType
	if ct == "" && r.body != "" {
		ct = "application/json"
	}
	if ct != "" {
		hr.Header.Set("Content-Type", ct)
	}
	if r.accept != "" {
		hr.Header.Set("Accept", r.accept)
	}
	if r.acceptEncoding != "" {
		hr.Header.Set("Accept-Encoding", r.acceptEncoding)
	}
	resp, err := ts.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// create POSTs a widget and returns it as answered.
func (ts *testServer) create(t testing.TB, name string, spec string) map[string]any {
	t.Helper()
	if spec == "" {
		spec = "{}"
	}
	resp, b := ts.do(t, req{method: "POST", path: ns, body: `{"apiVersion":"test.example.com/v1","kind":"Widget","metadata":{"name":"` + name + `"},"spec":` + spec + `}`})
	if resp.StatusCode != 201 {
		t.Fatalf("create %s: %d %s", name, resp.StatusCode, b)
	}
	return decode(t, b)
}

func decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return m
}

// wantStatus checks a Status response.
func wantStatus(t testing.TB, resp *http.Response, b []byte, code int, reason meta.StatusReason, message string) meta.Status {
	t.Helper()
	if resp.StatusCode != code {
		t.Fatalf("code %d, want %d: %s", resp.StatusCode, code, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var st meta.Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != "Failure" || int(st.Code) != code || st.Reason != reason || st.Message != message {
		t.Errorf("status %s\nwant %d %s %q", b, code, reason, message)
	}
	return st
}

// path reads a value from decoded JSON by dotted path.
func path(m map[string]any, p string) any {
	var cur any = m
	for _, k := range strings.Split(p, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

func compact(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
