package request

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/internal/race"
)

// TestSplitPath checks splitPath against what it replaced: strings.Split
// of the path trimmed of its slashes (nil for an empty one).
func TestSplitPath(t *testing.T) {
	for _, p := range []string{
		"", "/", "//", "/api", "/api/", "api/v1", "/apis/g/v/namespaces/ns/things/a/status",
		"/apis//v//things", "/a/b/c/d/e/f/g/h/i/j/k", "/x%2Fy/z", "///a///",
	} {
		var want []string
		if trimmed := strings.Trim(p, "/"); trimmed != "" {
			want = strings.Split(trimmed, "/")
		}
		var buf [8]string
		if got := splitPath(buf[:0], p); !slices.Equal(got, want) {
			t.Errorf("splitPath(%q) = %q, want %q", p, got, want)
		}
	}
}

// TestLowerMethod: the verb of a non-resource request is its method in
// lower case, whatever the method.
func TestLowerMethod(t *testing.T) {
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "CONNECT", "TRACE", "PROPFIND", "Get", "get"} {
		if got, want := lowerMethod(m), strings.ToLower(m); got != want {
			t.Errorf("lowerMethod(%q) = %q, want %q", m, got, want)
		}
	}
}

// TestResolveAllocations: resolving a GET of one object without a query
// allocates the Info only (its path segments live in it, its verb is a
// constant). It allocated three times before: the Info, the segments and
// the lowercased method.
func TestResolveAllocations(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates on its own")
	}
	for _, target := range []string{
		"/apis/wardle.example.com/v1beta1/namespaces/ns/flunders/f1",
		"/api/v1/namespaces/ns/configmaps/c1",
		"/healthz",
	} {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		var info *Info
		allocs := testing.AllocsPerRun(100, func() { info = DefaultResolver.Resolve(r) })
		if allocs > 1 {
			t.Errorf("Resolve(GET %s): %v allocations, want 1", target, allocs)
		}
		if info.Verb != "get" {
			t.Errorf("Resolve(GET %s).Verb = %q", target, info.Verb)
		}
	}
}
