package server_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server"
)

// TestEscapedPathSegments: authorization, the long-running decision and
// the handlers read one parse of the path. A namespace or name that is
// ".." or holds an escaped "/" is refused before any of them runs, with
// kube-apiserver's wording; other escapes address the object they spell.
func TestEscapedPathSegments(t *testing.T) {
	var (
		mu    sync.Mutex
		asked []authz.Attributes
		long  []string
	)
	s := newServer(t, "paths", server.NewEmptyDelegate(), func(c *server.Config) {
		c.Authorizer = authz.Func(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, a)
			return authz.DecisionAllow, "", nil
		})
		c.LongRunning = func(i *request.Info) bool {
			mu.Lock()
			defer mu.Unlock()
			if i.IsLongRunning() {
				long = append(long, i.Path)
			}
			return i.IsLongRunning()
		}
	})
	if err := s.InstallAPIGroup(widgetGroup(t, "a.example.com")); err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		s.Handler.ServeHTTP(rec, r)
		return rec
	}
	const g = "/apis/a.example.com/v1"
	if rec := do("POST", g+"/namespaces/ns/widgets", `{"metadata":{"name":"w"}}`); rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}

	for _, tc := range []struct {
		method, path string
		code         int
		message      string
	}{
		// Was authorized as the non-resource path /apis/.../widgets and
		// served as a list of namespace "..".
		{"GET", g + "/namespaces/%2E%2E/widgets", 400, `Namespace parameter invalid: "..": may not be '..'`},
		{"GET", g + "/namespaces/%2e/widgets/w", 400, `Namespace parameter invalid: ".": may not be '.'`},
		// Was authorized in namespace "a" on resource "b", served in
		// namespace "a/b".
		{"GET", g + "/namespaces/a%2Fb/widgets", 400, `Namespace parameter invalid: "a/b": may not contain '/'`},
		{"DELETE", g + "/namespaces/ns/widgets/%2E%2E", 400, `Name parameter invalid: "..": may not be '..'`},
		// Was judged long-running (an exec subresource) and served as a
		// get of the name "x/exec", with no timeout.
		{"GET", g + "/namespaces/ns/widgets/x%2Fexec", 400, `Name parameter invalid: "x/exec": may not contain '/'`},
		{"GET", g + "/namespaces/ns/widgets%2Fw", 404, "the server could not find the requested resource"},
	} {
		mu.Lock()
		asked, long = nil, nil
		mu.Unlock()
		rec := do(tc.method, tc.path, "")
		var st meta.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Errorf("%s %s: %d %s: %v", tc.method, tc.path, rec.Code, rec.Body, err)
			continue
		}
		if rec.Code != tc.code || int(st.Code) != tc.code || st.Message != tc.message {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, rec.Code, st.Message, tc.code, tc.message)
		}
		if tc.code == 400 && st.Reason != meta.StatusReasonBadRequest {
			t.Errorf("%s %s: reason %q", tc.method, tc.path, st.Reason)
		}
		mu.Lock()
		if len(asked) != 0 || len(long) != 0 {
			t.Errorf("%s %s: authorized as %+v, long-running %v; want refused before the filters", tc.method, tc.path, asked, long)
		}
		mu.Unlock()
	}

	// Escapes of ordinary characters address the object they spell, and
	// authorization judges that object.
	mu.Lock()
	asked = nil
	mu.Unlock()
	rec := do("GET", g+"/namespaces/n%73/widgets/%77", "")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"name":"w"`) {
		t.Errorf("get ns/w through escapes: %d %s", rec.Code, rec.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || !asked[0].ResourceRequest || asked[0].Namespace != "ns" || asked[0].Name != "w" || asked[0].Resource != "widgets" || asked[0].Verb != "get" {
		t.Errorf("authorized as %+v, want get widgets ns/w", asked)
	}
}
