package filters_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server/filters"
	"github.com/apikit-dev/apikit/server/respond"
)

type memorySink struct {
	mu     sync.Mutex
	events []audit.Event
}

func (m *memorySink) Log(ev *audit.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, *ev)
}

func (m *memorySink) all() []audit.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.events)
}

func longRunning(i *request.Info) bool { return i.IsLongRunning() }

func auditedRequest(method, target string, u *authn.User) *http.Request {
	r := withInfo(httptest.NewRequest(method, target, nil))
	r.RemoteAddr = "192.0.2.7:51234"
	r.Header.Set("User-Agent", "kubectl/v1.32")
	return r.WithContext(authn.WithUser(r.Context(), u))
}

func TestAudit(t *testing.T) {
	alice := &authn.User{Name: "alice", UID: "u-1", Groups: []string{"dev", "system:authenticated"}}

	t.Run("a request", func(t *testing.T) {
		sink := &memorySink{}
		h := filters.WithAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
		}), sink, nil, longRunning)
		r := auditedRequest("POST", "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders?fieldManager=kubectl", alice)
		r.Header.Set("X-Forwarded-For", "203.0.113.9, 198.51.100.2")
		r.Header.Set("Authorization", "Bearer secret-token")
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, r)
		evs := sink.all()
		if len(evs) != 2 {
			t.Fatalf("%d events, want RequestReceived and ResponseComplete", len(evs))
		}
		if got := evs[0]; got.Stage != audit.StageRequestReceived || got.ResponseStatus != nil || got.AuditID != evs[1].AuditID ||
			got.User.Username != "alice" || got.Verb != "create" || got.ObjectRef == nil || got.Level != audit.LevelMetadata {
			t.Errorf("RequestReceived event %+v", got)
		}
		if line, _ := json.Marshal(&evs[0]); strings.Contains(string(line), "responseStatus") {
			t.Errorf("RequestReceived with a response status: %s", line)
		}
		ev := evs[1]
		if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" || ev.Level != "Metadata" || ev.Stage != "ResponseComplete" ||
			ev.Verb != "create" || ev.RequestURI != "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders?fieldManager=kubectl" ||
			ev.User.Username != "alice" || ev.User.UID != "u-1" || !slices.Equal(ev.User.Groups, alice.Groups) || ev.ImpersonatedUser != nil ||
			ev.UserAgent != "kubectl/v1.32" || ev.ResponseStatus == nil || ev.ResponseStatus.Code != 201 {
			t.Errorf("event %+v", ev)
		}
		if want := []string{"203.0.113.9", "198.51.100.2", "192.0.2.7"}; !slices.Equal(ev.SourceIPs, want) {
			t.Errorf("source IPs %v, want %v", ev.SourceIPs, want)
		}
		if ref := ev.ObjectRef; ref == nil || *ref != (audit.ObjectReference{Resource: "flunders", Namespace: "ns", APIGroup: "wardle.example.com", APIVersion: "v1beta1"}) {
			t.Errorf("objectRef %+v", ev.ObjectRef)
		}
		if id := rec.Header().Get("Audit-Id"); id == "" || id != ev.AuditID {
			t.Errorf("Audit-Id %q, event %q", id, ev.AuditID)
		}
		received, stage := time.Time(ev.RequestReceivedTimestamp), time.Time(ev.StageTimestamp)
		if received.Before(start.Add(-time.Second)) || stage.Before(received) {
			t.Errorf("timestamps %v %v", received, stage)
		}
		line, _ := json.Marshal(&ev)
		if strings.Contains(string(line), "secret-token") {
			t.Error("the credential reached the audit event")
		}
		if !strings.Contains(string(line), `"responseStatus":{"metadata":{},"code":201}`) ||
			!regexpMatch(`"stageTimestamp":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"`, string(line)) {
			t.Errorf("JSON %s", line)
		}
	})

	t.Run("the client's audit ID", func(t *testing.T) {
		sink := &memorySink{}
		h := filters.WithAudit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), sink, nil, longRunning)
		r := auditedRequest("GET", "/version", alice)
		r.Header.Set("Audit-ID", "my-trace-1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if ev := sink.all()[1]; ev.AuditID != "my-trace-1" || rec.Header().Get("Audit-Id") != "my-trace-1" || ev.Verb != "get" || ev.ObjectRef != nil ||
			ev.ResponseStatus.Code != 200 {
			t.Errorf("event %+v", ev)
		}
	})

	t.Run("impersonation is recorded", func(t *testing.T) {
		sink := &memorySink{}
		h := filters.WithAudit(filters.WithImpersonation(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(204)
		}), &impersonationPolicy{}), sink, nil, longRunning)
		r := auditedRequest("GET", "/apis/g/v/things", alice)
		r.Header.Set("Impersonate-User", "bob")
		r.Header.Set("Impersonate-Group", "dev")
		h.ServeHTTP(httptest.NewRecorder(), r)
		ev := sink.all()[1]
		if ev.User.Username != "alice" || ev.ImpersonatedUser == nil || ev.ImpersonatedUser.Username != "bob" ||
			!slices.Equal(ev.ImpersonatedUser.Groups, []string{"dev", "system:authenticated"}) || ev.ResponseStatus.Code != 204 {
			t.Errorf("event %+v impersonated %+v", ev, ev.ImpersonatedUser)
		}
		// A refused impersonation is audited too, as the real user's 403.
		r = auditedRequest("GET", "/apis/g/v/things", alice)
		r.Header.Set("Impersonate-User", "root")
		h.ServeHTTP(httptest.NewRecorder(), r)
		if ev := sink.all()[3]; ev.ImpersonatedUser != nil || ev.ResponseStatus.Code != 403 {
			t.Errorf("refused: %+v", ev)
		}
	})

	t.Run("a watch is recorded when it starts and when it ends", func(t *testing.T) {
		sink := &memorySink{}
		h := filters.WithAudit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			if len(sink.all()) != 2 {
				t.Error("no RequestReceived and ResponseStarted events while the watch runs")
			}
		}), sink, nil, longRunning)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, auditedRequest("GET", "/apis/g/v/things?watch=true", alice))
		evs := sink.all()
		if len(evs) != 3 || evs[0].Stage != "RequestReceived" || evs[1].Stage != "ResponseStarted" || evs[2].Stage != "ResponseComplete" ||
			evs[1].Verb != "watch" || evs[0].AuditID != evs[2].AuditID || evs[1].AuditID != evs[2].AuditID {
			t.Errorf("events %+v", evs)
		}
		if !rec.Flushed {
			t.Error("the flush did not reach the connection")
		}
	})

	t.Run("a panic", func(t *testing.T) {
		sink := &memorySink{}
		h := filters.WithPanicRecovery(filters.WithAudit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			panic("boom")
		}), sink, nil, longRunning))
		restore := slog.Default()
		slog.SetDefault(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
		defer slog.SetDefault(restore)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, auditedRequest("DELETE", "/apis/g/v/things/x", alice))
		if evs := sink.all(); len(evs) != 2 || evs[0].Stage != "RequestReceived" || evs[1].Stage != "Panic" || evs[1].ResponseStatus.Code != 500 || rec.Code != 500 {
			t.Errorf("events %+v, code %d", evs, rec.Code)
		}
	})

	t.Run("off", func(t *testing.T) {
		inner := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
		h := filters.WithAudit(inner, nil, nil, longRunning)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, auditedRequest("GET", "/", alice))
		if rec.Header().Get("Audit-Id") != "" {
			t.Error("an audit ID without auditing")
		}
	})
}

func TestAuditLogFile(t *testing.T) {
	path := t.TempDir() + "/audit/audit.log"
	sink, err := audit.OpenLogFile(path, audit.LogFileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := filters.WithAudit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), sink, nil, longRunning)
	for range 3 {
		h.ServeHTTP(httptest.NewRecorder(), auditedRequest("GET", "/apis", &authn.User{Name: "alice"}))
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	data := mustReadFile(t, path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 6 { // RequestReceived and ResponseComplete each
		t.Fatalf("%d lines:\n%s", len(lines), data)
	}
	for _, l := range lines {
		var ev audit.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.User.Username != "alice" {
			t.Errorf("line %s: %v", l, err)
		}
	}
	if mode := fileMode(t, path); mode != 0o600 {
		t.Errorf("mode %o, want 600", mode)
	}
	sink.Log(&audit.Event{}) // after Close: dropped, no panic
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

func TestFailedAuthenticationAudit(t *testing.T) {
	alice := authn.User{Name: "alice", Groups: []string{"dev"}}
	// Bearer "good" is alice; anything else is refused.
	authenticator := authn.Func(func(r *http.Request) (*authn.Response, bool, error) {
		if r.Header.Get("Authorization") == "Bearer good" {
			return &authn.Response{User: alice}, true, nil
		}
		return nil, false, nil
	})
	chain := func(sink audit.Sink, code int) http.Handler {
		inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) })
		return filters.WithFailedAuthenticationAudit(
			filters.WithAuthentication(filters.WithAudit(inner, sink, nil, longRunning), authenticator, nil), sink, nil)
	}
	for _, tc := range []struct {
		name      string
		token     string
		code      int // what the handler answers
		wantCode  int32
		wantStage string
		wantUser  string
	}{
		{name: "no credentials", code: 200, wantCode: 401, wantStage: audit.StageResponseStarted},
		{name: "a bad token", token: "bad", code: 200, wantCode: 401, wantStage: audit.StageResponseStarted},
		{name: "authenticated", token: "good", code: 200, wantCode: 200, wantStage: audit.StageResponseComplete, wantUser: "alice"},
		{name: "authenticated, the handler answers 401", token: "good", code: 401, wantCode: 401, wantStage: audit.StageResponseComplete, wantUser: "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memorySink{}
			r := withInfo(httptest.NewRequest("GET", "/apis/wardle.example.com/v1beta1/flunders", nil))
			if tc.token != "" {
				r.Header.Set("Authorization", "Bearer "+tc.token)
			}
			rec := httptest.NewRecorder()
			chain(sink, tc.code).ServeHTTP(rec, r)
			// An authenticated request is also recorded when received; a
			// refused one only once.
			want := 1
			if tc.wantUser != "" {
				want = 2
			}
			evs := sink.all()
			if len(evs) != want {
				t.Fatalf("%d events, want %d: %+v", len(evs), want, evs)
			}
			ev := evs[want-1]
			if ev.ResponseStatus == nil || ev.ResponseStatus.Code != tc.wantCode || ev.Stage != tc.wantStage || ev.User.Username != tc.wantUser {
				t.Errorf("event %+v (status %+v), want code %d at %s by %q", ev, ev.ResponseStatus, tc.wantCode, tc.wantStage, tc.wantUser)
			}
			if ev.AuditID == "" || ev.Verb != "list" || ev.ObjectRef == nil || ev.ObjectRef.Resource != "flunders" {
				t.Errorf("event %+v lacks the request's identity", ev)
			}
		})
	}
}

func TestAuditPolicy(t *testing.T) {
	policy, err := audit.ParsePolicy([]byte(`
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  resources: [{group: wardle.example.com, resources: [fischers]}]
- level: RequestResponse
  resources: [{group: wardle.example.com, resources: [flunders]}]
  namespaces: [full]
- level: Request
  resources: [{group: wardle.example.com, resources: [flunders]}]
  omitStages: [ResponseStarted]
- level: Metadata
  resources: [{group: other.example.com}]
  omitStages: [ResponseComplete]
- level: Metadata
  omitStages: [RequestReceived]
`))
	if err != nil {
		t.Fatal(err)
	}
	alice := &authn.User{Name: "alice", Groups: []string{"system:authenticated"}}
	const created = `{"kind":"Flunder","metadata":{"name":"f","uid":"u"}}`
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			_, _ = io.ReadAll(r.Body) // as a handler reads it
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, created)
	})
	for _, tc := range []struct {
		name, target, contentType, body string
		wantLevel                       string // "" for no event
		wantRequest, wantResponse       string
		wantStages                      []string // when not RequestReceived, ResponseComplete
	}{
		{name: "None", target: "/apis/wardle.example.com/v1beta1/fischers", body: `{"a":1}`},
		{name: "RequestResponse", target: "/apis/wardle.example.com/v1beta1/namespaces/full/flunders", contentType: "application/json",
			body: `{"metadata":{"name":"f"}}`, wantLevel: audit.LevelRequestResponse, wantRequest: `{"metadata":{"name":"f"}}`, wantResponse: created},
		{name: "Request, a YAML body as JSON", target: "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders", contentType: "application/yaml",
			body: "metadata:\n  name: f\n", wantLevel: audit.LevelRequest, wantRequest: `{"metadata":{"name":"f"}}`},
		{name: "Request, a body over the limit is left out", target: "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders", contentType: "application/json",
			body: `{"a":"` + strings.Repeat("x", 4<<20) + `"}`, wantLevel: audit.LevelRequest},
		{name: "Request, protobuf is left out", target: "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders", contentType: "application/vnd.kubernetes.protobuf",
			body: "k8s\x00\x0a\x00", wantLevel: audit.LevelRequest},
		{name: "Metadata, its ResponseComplete omitted", target: "/apis/other.example.com/v1/things", body: `{}`,
			wantLevel: audit.LevelMetadata, wantStages: []string{audit.StageRequestReceived}},
		{name: "Metadata, its RequestReceived omitted", target: "/apis/third.example.com/v1/things", body: `{}`,
			wantLevel: audit.LevelMetadata, wantStages: []string{audit.StageResponseComplete}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memorySink{}
			h := filters.WithAudit(handler, sink, policy, longRunning)
			r := withInfo(httptest.NewRequest("POST", tc.target, strings.NewReader(tc.body)))
			if tc.contentType != "" {
				r.Header.Set("Content-Type", tc.contentType)
			}
			r = r.WithContext(authn.WithUser(r.Context(), alice))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != http.StatusCreated || rec.Body.String() != created {
				t.Fatalf("the response changed: %d %s", rec.Code, rec.Body)
			}
			evs := sink.all()
			if tc.wantLevel == "" {
				if len(evs) != 0 {
					t.Fatalf("events %+v, want none", evs)
				}
				return
			}
			wantStages := tc.wantStages
			if wantStages == nil {
				wantStages = []string{audit.StageRequestReceived, audit.StageResponseComplete}
			}
			var stages []string
			for _, ev := range evs {
				stages = append(stages, ev.Stage)
				if ev.Level != tc.wantLevel || (ev.Stage == audit.StageRequestReceived && (ev.RequestObject != nil || ev.ResponseObject != nil)) {
					t.Errorf("%s event at level %s, with request %s response %s", ev.Stage, ev.Level, ev.RequestObject, ev.ResponseObject)
				}
			}
			if !slices.Equal(stages, wantStages) {
				t.Fatalf("stages %v, want %v", stages, wantStages)
			}
			ev := evs[len(evs)-1]
			if ev.Stage != audit.StageResponseComplete {
				return
			}
			if ev.Level != tc.wantLevel || string(ev.RequestObject) != tc.wantRequest || string(ev.ResponseObject) != tc.wantResponse {
				t.Errorf("event level %s stage %s request %s response %s\nwant %s %s %s", ev.Level, ev.Stage, ev.RequestObject, ev.ResponseObject,
					tc.wantLevel, tc.wantRequest, tc.wantResponse)
			}
		})
	}

	t.Run("RequestResponse, a gzip-compressed response as JSON", func(t *testing.T) {
		sink := &memorySink{}
		big := `{"kind":"FlunderList","items":[` + strings.Repeat(`{"metadata":{"name":"f"}},`, 10000) + `{}]}`
		h := filters.WithAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			respond.Body(w, r, http.StatusOK, "application/json", []byte(big))
		}), sink, policy, longRunning)
		r := withInfo(httptest.NewRequest("GET", "/apis/wardle.example.com/v1beta1/namespaces/full/flunders", nil))
		r.Header.Set("Accept-Encoding", "gzip")
		r = r.WithContext(authn.WithUser(r.Context(), alice))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Header().Get("Content-Encoding") != "gzip" || rec.Body.Len() >= len(big) {
			t.Fatalf("not compressed: %q, %d bytes", rec.Header().Get("Content-Encoding"), rec.Body.Len())
		}
		if evs := sink.all(); len(evs) != 2 || string(evs[1].ResponseObject) != big {
			t.Errorf("%d events; the response object is not the uncompressed body", len(evs))
		}
	})

	t.Run("failed authentication under a policy", func(t *testing.T) {
		sink := &memorySink{}
		refuse := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
		for target, want := range map[string]int{
			"/apis/wardle.example.com/v1beta1/fischers":                 0, // None
			"/apis/wardle.example.com/v1beta1/namespaces/x/flunders":    0, // its rule omits ResponseStarted
			"/apis/wardle.example.com/v1beta1/namespaces/full/flunders": 1, // RequestResponse: at Metadata, bodies unread
		} {
			before := len(sink.all())
			filters.WithFailedAuthenticationAudit(refuse, sink, policy).ServeHTTP(httptest.NewRecorder(), withInfo(httptest.NewRequest("GET", target, nil)))
			evs := sink.all()[before:]
			if len(evs) != want || (want == 1 && (evs[0].Level != audit.LevelMetadata || evs[0].RequestObject != nil)) {
				t.Errorf("%s: events %+v, want %d at Metadata", target, evs, want)
			}
		}
	})
}

// stuckWriter blocks every Write until released, or fails them.
type stuckWriter struct {
	release chan struct{}
	fail    bool
}

func (s *stuckWriter) Write(p []byte) (int, error) {
	if s.fail {
		return 0, io.ErrShortWrite
	}
	<-s.release
	return len(p), nil
}

// TestAuditModes: in batch mode a stuck audit log never holds up a
// request; in blocking mode the request waits for it; in blocking-strict
// mode a request whose RequestReceived event cannot be written is refused
// with 500, as kube-apiserver refuses it, while blocking serves it.
func TestAuditModes(t *testing.T) {
	alice := &authn.User{Name: "alice"}
	served := 0
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++ })
	serve := func(sink audit.Sink) (chan *httptest.ResponseRecorder, *http.Request) {
		done := make(chan *httptest.ResponseRecorder, 1)
		r := auditedRequest("GET", "/apis/g/v/things", alice)
		go func() {
			rec := httptest.NewRecorder()
			filters.WithAudit(handler, sink, nil, longRunning).ServeHTTP(rec, r)
			done <- rec
		}()
		return done, r
	}

	t.Run("batch", func(t *testing.T) {
		w := &stuckWriter{release: make(chan struct{})}
		file := audit.NewLogSink(w, audit.FormatJSON)
		batch := audit.NewBatchSink(file, audit.BatchConfig{BufferSize: 4, MaxBatchSize: 1})
		for i := range 10 {
			done, _ := serve(batch)
			select {
			case rec := <-done:
				if rec.Code != 200 {
					t.Fatalf("request %d: %d", i, rec.Code)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("request %d waited for the stuck audit log", i)
			}
		}
		// 20 events: four queued, perhaps one more taken by the writer
		// before the queue filled, the rest dropped.
		if d := batch.Dropped(); d < 15 || d > 16 {
			t.Errorf("dropped %d, want 15 or 16", d)
		}
		close(w.release)
		_ = batch.Close()
	})

	t.Run("blocking waits", func(t *testing.T) {
		w := &stuckWriter{release: make(chan struct{})}
		done, _ := serve(audit.NewLogSink(w, audit.FormatJSON))
		select {
		case <-done:
			t.Fatal("the request finished before its event was written")
		case <-time.After(200 * time.Millisecond):
		}
		close(w.release)
		select {
		case rec := <-done:
			if rec.Code != 200 {
				t.Errorf("code %d", rec.Code)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the request never finished")
		}
	})

	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("a failing log, strict %v", strict), func(t *testing.T) {
			restore := slog.Default()
			slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
			defer slog.SetDefault(restore)
			file := audit.NewLogSink(&stuckWriter{fail: true}, audit.FormatJSON)
			var sink audit.Sink = file
			if strict {
				sink = audit.Strict(file)
			}
			served = 0
			done, r := serve(sink)
			rec := <-done
			if !strict {
				if rec.Code != 200 || served != 1 {
					t.Errorf("code %d, served %d: blocking mode refused a request its log failed", rec.Code, served)
				}
				return
			}
			want := fmt.Sprintf("Internal Server Error: %q: failed to store audit event\n", r.URL.RequestURI())
			if rec.Code != 500 || rec.Body.String() != want || served != 0 {
				t.Errorf("code %d body %q served %d, want 500 %q, not served", rec.Code, rec.Body, served, want)
			}
		})
	}
}
