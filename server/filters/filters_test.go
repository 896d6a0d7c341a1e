package filters_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server/filters"
)

// status decodes a Status response and checks its code and message.
func status(t *testing.T, rec *httptest.ResponseRecorder, code int, reason meta.StatusReason, message string) meta.Status {
	t.Helper()
	if rec.Code != code {
		t.Fatalf("code %d, want %d (body %s)", rec.Code, code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var st meta.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != meta.StatusFailure || st.Code != int32(code) ||
		st.Reason != reason || st.Message != message {
		t.Errorf("status %+v\nwant code %d reason %s message %q", st, code, reason, message)
	}
	return st
}

func withInfo(r *http.Request) *http.Request {
	return r.WithContext(request.WithInfo(r.Context(), request.DefaultResolver.Resolve(r)))
}

func TestPanicRecovery(t *testing.T) {
	h := filters.WithPanicRecovery(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("secret detail")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/apis/g/v/things", nil))
	status(t, rec, 500, meta.StatusReasonInternalError,
		"Internal error occurred: This request caused apiserver to panic. Look in the logs for details.")
	if strings.Contains(rec.Body.String(), "secret detail") {
		t.Error("the panic value reached the client")
	}

	// http.ErrAbortHandler is how a handler aborts a response on purpose:
	// it passes through to net/http.
	abort := filters.WithPanicRecovery(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler re-panicked", v)
			}
		}()
		abort.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()

	ok := filters.WithPanicRecovery(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	rec = httptest.NewRecorder()
	ok.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 204 {
		t.Errorf("a handler that does not panic: %d", rec.Code)
	}
}

func TestRequestInfo(t *testing.T) {
	var got *request.Info
	h := filters.WithRequestInfo(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got, _ = request.InfoFrom(r.Context())
	}), request.DefaultResolver)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("DELETE", "/apis/g/v/namespaces/ns/things/x", nil))
	if got == nil || got.Verb != "delete" || got.Namespace != "ns" || got.Resource != "things" || got.Name != "x" {
		t.Errorf("info %+v", got)
	}
}

func TestTimeout(t *testing.T) {
	longRunning := func(i *request.Info) bool { return i.IsLongRunning() }
	waitForCancel := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })

	t.Run("a handler setting headers after the timeout does not race the 504", func(t *testing.T) {
		done := make(chan struct{})
		h := filters.WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(done)
			header := w.Header() // taken before the timeout, as flow control does
			<-r.Context().Done()
			for i := range 2000 {
				header.Set("X-Late-"+strconv.Itoa(i%16), "1")
			}
		}), 20*time.Millisecond, longRunning)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, withInfo(httptest.NewRequest("GET", "/apis/g/v/things", nil)))
		<-done
		if rec.Code != 504 {
			t.Errorf("code %d, want 504", rec.Code)
		}
		if rec.Header().Get("X-Late-0") != "" {
			t.Error("the abandoned handler's header reached the client")
		}
	})

	t.Run("headers set outside and by the handler reach the client", func(t *testing.T) {
		inner := filters.WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if w.Header().Get("X-Outside") != "1" {
				t.Error("the handler does not see the header set outside")
			}
			w.Header().Set("X-Inside", "1")
			w.(http.Flusher).Flush()
			w.Header().Set("X-After-Flush", "1")
		}), time.Minute, longRunning)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Outside", "1")
			inner.ServeHTTP(w, r)
		})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, withInfo(httptest.NewRequest("GET", "/apis/g/v/things", nil)))
		if rec.Code != 200 || rec.Result().Header.Get("X-Outside") != "1" || rec.Result().Header.Get("X-Inside") != "1" {
			t.Errorf("code %d, headers %v: want 200 with X-Outside and X-Inside", rec.Code, rec.Result().Header)
		}
		if rec.Result().Header.Get("X-After-Flush") != "" {
			t.Error("a header set after the status went out reached the client")
		}
	})

	t.Run("504 when nothing was written", func(t *testing.T) {
		release, lateDone := make(chan struct{}), make(chan error, 1)
		var ctxErr error
		h := filters.WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			ctxErr = r.Context().Err()
			// The abandoned handler may still answer later; that must
			// reach neither the client nor the timeout response, nor
			// change the request net/http still holds.
			<-release
			r.Header.Set("X-Changed", "1")
			w.Header().Set("X-Late", "1")
			w.WriteHeader(200)
			_, err := w.Write([]byte("late"))
			lateDone <- err
		}), 20*time.Millisecond, longRunning)
		rec := httptest.NewRecorder()
		outer := withInfo(httptest.NewRequest("GET", "/apis/g/v/things", nil))
		h.ServeHTTP(rec, outer)
		close(release)
		if err := <-lateDone; !errors.Is(err, http.ErrHandlerTimeout) {
			t.Errorf("late write: %v, want http.ErrHandlerTimeout", err)
		}
		if outer.Header.Get("X-Changed") != "" {
			t.Error("the abandoned handler changed the request net/http holds")
		}
		if !errors.Is(ctxErr, context.DeadlineExceeded) {
			t.Errorf("handler context ended with %v, want the deadline", ctxErr)
		}
		st := status(t, rec, 504, meta.StatusReasonTimeout, "Timeout: request did not complete within requested timeout - context deadline exceeded")
		if st.Details == nil {
			t.Error("no details")
		}
		if rec.Header().Get("X-Late") != "" || strings.Contains(rec.Body.String(), "late") {
			t.Error("the abandoned handler's answer reached the client")
		}
	})

	t.Run("a shorter ?timeout wins", func(t *testing.T) {
		h := filters.WithTimeout(waitForCancel, time.Hour, longRunning)
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, withInfo(httptest.NewRequest("GET", "/apis/g/v/things?timeout=20ms", nil)))
		if rec.Code != 504 || time.Since(start) > 30*time.Second {
			t.Errorf("code %d after %v", rec.Code, time.Since(start))
		}
	})

	t.Run("a longer or zero ?timeout does not", func(t *testing.T) {
		for _, q := range []string{"1h", "0s", "-5s"} {
			var deadline time.Time
			h := filters.WithTimeout(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				deadline, _ = r.Context().Deadline()
			}), time.Minute, longRunning)
			h.ServeHTTP(httptest.NewRecorder(), withInfo(httptest.NewRequest("GET", "/apis/g/v/things?timeout="+q, nil)))
			if left := time.Until(deadline); left > time.Minute || left < 30*time.Second {
				t.Errorf("?timeout=%s: deadline in %v, want the server's minute", q, left)
			}
		}
	})

	t.Run("a malformed ?timeout is a 400", func(t *testing.T) {
		called := false
		h := filters.WithTimeout(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }), time.Minute, longRunning)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, withInfo(httptest.NewRequest("GET", "/apis/g/v/things?timeout=soon", nil)))
		status(t, rec, 400, meta.StatusReasonBadRequest, `invalid timeout specified in the request URL - time: invalid duration "soon"`)
		if called {
			t.Error("handler ran")
		}
	})

	t.Run("watches are exempt", func(t *testing.T) {
		var hasDeadline bool
		h := filters.WithTimeout(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			_, hasDeadline = r.Context().Deadline()
		}), time.Millisecond, longRunning)
		h.ServeHTTP(httptest.NewRecorder(), withInfo(httptest.NewRequest("GET", "/apis/g/v/things?watch=true&timeout=1ms", nil)))
		if hasDeadline {
			t.Error("a watch got a deadline")
		}
	})

	t.Run("a finished response passes through", func(t *testing.T) {
		h := filters.WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := r.Context().Deadline(); !ok {
				t.Error("no deadline on a non-long-running request")
			}
			w.Header().Set("X-Answer", "42")
			w.WriteHeader(201)
			_, _ = io.WriteString(w, "made")
			w.(http.Flusher).Flush()
		}), time.Minute, longRunning)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, withInfo(httptest.NewRequest("POST", "/apis/g/v/things", nil)))
		if rec.Code != 201 || rec.Body.String() != "made" || rec.Header().Get("X-Answer") != "42" || !rec.Flushed {
			t.Errorf("got %d %q %v flushed=%v", rec.Code, rec.Body, rec.Header(), rec.Flushed)
		}
	})

	t.Run("a response under way is aborted", func(t *testing.T) {
		h := filters.WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			_, _ = io.WriteString(w, "partial")
			<-r.Context().Done()
		}), 20*time.Millisecond, longRunning)
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler", v)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), withInfo(httptest.NewRequest("GET", "/apis/g/v/things", nil)))
		t.Error("no abort")
	})

	t.Run("a panic in the handler reaches the caller", func(t *testing.T) {
		h := filters.WithPanicRecovery(filters.WithTimeout(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			panic("boom")
		}), time.Minute, longRunning))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, withInfo(httptest.NewRequest("GET", "/apis/g/v/things", nil)))
		if rec.Code != 500 {
			t.Errorf("code %d, want 500 from the recovery filter", rec.Code)
		}
	})

	t.Run("handlers run in reused goroutines, a panic and an abandoned handler aside", func(t *testing.T) {
		var goroutines sync.Map
		release := make(chan struct{})
		defer close(release)
		h := filters.WithPanicRecovery(filters.WithTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			buf := make([]byte, 64)
			id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:runtime.Stack(buf, false)]), "goroutine "), " ")
			goroutines.Store(id, true)
			switch r.URL.Query().Get("do") {
			case "panic":
				panic("boom")
			case "hang":
				<-release // abandoned at the timeout, still running
			}
			w.WriteHeader(http.StatusNoContent)
		}), 50*time.Millisecond, longRunning))
		for i, do := range []string{"", "panic", "", "hang", "", "", "", "", "", ""} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, withInfo(httptest.NewRequest("GET", "/apis/g/v/things?do="+do, nil)))
			want := map[string]int{"": 204, "panic": 500, "hang": 504}[do]
			if rec.Code != want {
				t.Errorf("request %d (%q): code %d, want %d", i, do, rec.Code, want)
			}
			// A worker hands back the answer before it waits for the
			// next task: give it the moment it needs, or the next
			// request finds none waiting and starts a goroutine (which
			// is correct, only not what this test looks at).
			time.Sleep(5 * time.Millisecond)
		}
		n := 0
		goroutines.Range(func(any, any) bool { n++; return true })
		// Without reuse each of the 10 runs in a goroutine of its own;
		// with it, 2 (one abandoned), plus a spare when the scheduler
		// was slow once.
		if n > 4 {
			t.Errorf("10 handlers one after another ran in %d goroutines, want 2 (one of them abandoned)", n)
		}
	})

	t.Run("no timeout configured", func(t *testing.T) {
		inner := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
		if h := filters.WithTimeout(inner, 0, longRunning); h == nil {
			t.Error("nil handler")
		}
	})
}

func TestAuthentication(t *testing.T) {
	staticUser := func(u authn.User) authn.Authenticator {
		return authn.Func(func(*http.Request) (*authn.Response, bool, error) { return &authn.Response{User: u}, true, nil })
	}
	none := authn.Func(func(*http.Request) (*authn.Response, bool, error) { return nil, false, nil })
	failing := authn.Func(func(*http.Request) (*authn.Response, bool, error) { return nil, false, errors.New("bad token") })
	public := []string{"/healthz", "/readyz"}

	type seen struct {
		user   *authn.User
		header string
	}
	run := func(a authn.Authenticator, path string) (*httptest.ResponseRecorder, *seen) {
		var s *seen
		h := filters.WithAuthentication(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			u, _ := authn.UserFrom(r.Context())
			s = &seen{user: u, header: r.Header.Get("Authorization")}
		}), a, public)
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set("Authorization", "Bearer secret")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec, s
	}

	for _, a := range []authn.Authenticator{none, failing} {
		rec, s := run(a, "/apis/g/v/things")
		if s != nil {
			t.Error("handler ran without credentials")
		}
		status(t, rec, 401, meta.StatusReasonUnauthorized, "Unauthorized")
		if want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}` + "\n"; rec.Body.String() != want {
			t.Errorf("body %s\nwant %s", rec.Body, want)
		}
	}

	_, s := run(none, "/healthz")
	if s == nil || s.user.Name != "system:anonymous" || !slices.Equal(s.user.Groups, []string{"system:unauthenticated"}) {
		t.Errorf("public path as %+v", s)
	}
	if _, s := run(none, "/healthz/ping"); s != nil {
		t.Error("a path under a public one is public too")
	}
	// Invalid credentials are refused even where none are needed, as
	// kube-apiserver does: a broken token must not pass silently.
	if rec, s := run(failing, "/healthz"); s != nil || rec.Code != 401 {
		t.Errorf("invalid credentials on a public path: code %d, handler ran: %v", rec.Code, s != nil)
	}
	prefixed := filters.WithAuthentication(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), none, []string{"/debug/public/*"})
	rec := httptest.NewRecorder()
	prefixed.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/public/x", nil))
	if rec.Code != 200 {
		t.Errorf("a path under a public prefix: %d", rec.Code)
	}

	groups := []string{"devs"}
	_, s = run(staticUser(authn.User{Name: "bob", Groups: groups[:1:1]}), "/apis/g/v/things")
	if s == nil || s.user.Name != "bob" || !slices.Equal(s.user.Groups, []string{"devs", "system:authenticated"}) {
		t.Errorf("authenticated as %+v", s)
	}
	if s.header != "" {
		t.Errorf("Authorization header %q reached the handler", s.header)
	}
	if groups[0] != "devs" {
		t.Error("the authenticator's groups were changed")
	}
	_, s = run(staticUser(authn.User{Name: "bob", Groups: []string{"system:authenticated", "devs"}}), "/")
	if !slices.Equal(s.user.Groups, []string{"system:authenticated", "devs"}) {
		t.Errorf("groups %v: system:authenticated added twice", s.user.Groups)
	}
	_, s = run(staticUser(authn.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}), "/")
	if !slices.Equal(s.user.Groups, []string{"system:unauthenticated"}) {
		t.Errorf("an anonymous user became authenticated: %v", s.user.Groups)
	}
}

func TestAuthorization(t *testing.T) {
	bob := &authn.User{Name: "bob", Groups: []string{"system:authenticated"}}
	deny := func(reason string) authz.Authorizer {
		return authz.Func(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
			return authz.DecisionDeny, reason, nil
		})
	}
	for _, tc := range []struct {
		name, method, path string
		authorizer         authz.Authorizer
		code               int
		message            string
		details            *meta.StatusDetails
	}{
		{
			name: "namespaced object", method: "GET", path: "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders/f",
			authorizer: deny(""), code: 403,
			message: `flunders.wardle.example.com "f" is forbidden: User "bob" cannot get resource "flunders" in API group "wardle.example.com" in the namespace "ns"`,
			details: &meta.StatusDetails{Name: "f", Group: "wardle.example.com", Kind: "flunders"},
		},
		{
			name: "with a reason", method: "POST", path: "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders",
			authorizer: deny("no RBAC policy matched"), code: 403,
			message: `flunders.wardle.example.com is forbidden: User "bob" cannot create resource "flunders" in API group "wardle.example.com" in the namespace "ns": no RBAC policy matched`,
			details: &meta.StatusDetails{Group: "wardle.example.com", Kind: "flunders"},
		},
		{
			name: "cluster scope", method: "GET", path: "/apis/wardle.example.com/v1alpha1/fischers",
			authorizer: authz.AlwaysDeny(), code: 403,
			message: `fischers.wardle.example.com is forbidden: User "bob" cannot list resource "fischers" in API group "wardle.example.com" at the cluster scope: Everything is forbidden.`,
		},
		{
			name: "subresource", method: "PUT", path: "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders/f/status",
			authorizer: deny(""), code: 403,
			message: `flunders.wardle.example.com "f" is forbidden: User "bob" cannot update resource "flunders/status" in API group "wardle.example.com" in the namespace "ns"`,
		},
		{
			name: "all namespaces watch", method: "GET", path: "/apis/wardle.example.com/v1beta1/flunders?watch=1",
			authorizer: deny(""), code: 403,
			message: `flunders.wardle.example.com is forbidden: User "bob" cannot watch resource "flunders" in API group "wardle.example.com" at the cluster scope`,
		},
		{
			name: "core group", method: "DELETE", path: "/api/v1/namespaces/ns/pods",
			authorizer: deny(""), code: 403,
			message: `pods is forbidden: User "bob" cannot deletecollection resource "pods" in API group "" in the namespace "ns"`,
		},
		{
			name: "non-resource", method: "GET", path: "/healthz",
			authorizer: deny(""), code: 403,
			message: `forbidden: User "bob" cannot get path "/healthz"`,
		},
		{
			name: "no opinion is no", method: "GET", path: "/version",
			authorizer: authz.Func(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
				return authz.DecisionNoOpinion, "", nil
			}), code: 403,
			message: `forbidden: User "bob" cannot get path "/version"`,
		},
		{
			name: "authorizer error", method: "GET", path: "/apis/g/v/things",
			authorizer: authz.Func(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
				return authz.DecisionNoOpinion, "", errors.New("webhook unreachable")
			}), code: 500,
			message: "Internal error occurred: webhook unreachable",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var called atomic.Bool
			h := filters.WithAuthorization(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called.Store(true) }), tc.authorizer)
			r := withInfo(httptest.NewRequest(tc.method, tc.path, nil))
			r = r.WithContext(authn.WithUser(r.Context(), bob))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			reason := meta.StatusReasonForbidden
			if tc.code == 500 {
				reason = meta.StatusReasonInternalError
			}
			st := status(t, rec, tc.code, reason, tc.message)
			if tc.details != nil && (st.Details == nil || st.Details.Name != tc.details.Name || st.Details.Group != tc.details.Group || st.Details.Kind != tc.details.Kind) {
				t.Errorf("details %+v, want %+v", st.Details, tc.details)
			}
			if called.Load() {
				t.Error("handler ran")
			}
		})
	}

	var got authz.Attributes
	h := filters.WithAuthorization(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }),
		authz.Func(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
			got = a
			return authz.DecisionAllow, "", nil
		}))
	r := withInfo(httptest.NewRequest("PATCH", "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders/f/status", nil))
	r = r.WithContext(authn.WithUser(r.Context(), bob))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	want := authz.Attributes{User: bob, Verb: "patch", ResourceRequest: true, APIGroup: "wardle.example.com", APIVersion: "v1beta1",
		Resource: "flunders", Subresource: "status", Namespace: "ns", Name: "f", Path: "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders/f/status"}
	if rec.Code != 204 || got != want {
		t.Errorf("allowed: %d, attributes %+v\nwant %+v", rec.Code, got, want)
	}
}
