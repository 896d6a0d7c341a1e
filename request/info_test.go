package request_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/request"
)

func TestResolve(t *testing.T) {
	const g = "/apis/wardle.example.com/v1beta1"
	for _, tc := range []struct {
		method, url string
		want        request.Info // Path and Parts are not compared
	}{
		// Non-resource paths: the verb is the lowercased method.
		{"GET", "/healthz", request.Info{Verb: "get"}},
		{"GET", "/", request.Info{Verb: "get"}},
		{"POST", "/openapi/v2", request.Info{Verb: "post"}},
		{"GET", "/api", request.Info{Verb: "get"}},
		{"GET", "/api/v1", request.Info{Verb: "get"}},
		{"GET", "/apis", request.Info{Verb: "get"}},
		{"GET", "/apis/wardle.example.com", request.Info{Verb: "get"}},
		// Unclean paths name no resource: never a namespace or name "..".
		{"DELETE", g + "/namespaces/../flunders/..", request.Info{Verb: "delete"}},
		{"GET", g + "/namespaces/./flunders", request.Info{Verb: "get"}},
		{"GET", "/apis/wardle.example.com//v1beta1/flunders", request.Info{Verb: "get"}},
		// Group-version discovery, as kube-apiserver parses it: the
		// prefix is known, the request is not a resource one.
		{"GET", g, request.Info{Verb: "get", APIPrefix: "apis"}},
		{"PUT", "/apis/wardle.example.com/v1beta1/", request.Info{Verb: "put", APIPrefix: "apis"}},
		{"GET", "/apis/wardle.example.com/v1beta1/watch", request.Info{Verb: "watch", APIPrefix: "apis", APIGroup: "wardle.example.com", APIVersion: "v1beta1"}},

		// Collections.
		{"GET", g + "/flunders", res("list", "", "flunders", "", "")},
		{"GET", g + "/namespaces/ns/flunders", res("list", "ns", "flunders", "", "")},
		{"HEAD", g + "/namespaces/ns/flunders", res("list", "ns", "flunders", "", "")},
		{"POST", g + "/namespaces/ns/flunders", res("create", "ns", "flunders", "", "")},
		{"DELETE", g + "/namespaces/ns/flunders", res("deletecollection", "ns", "flunders", "", "")},
		{"GET", g + "/namespaces/ns/flunders?watch=true", res("watch", "ns", "flunders", "", "")},
		{"GET", g + "/namespaces/ns/flunders?watch=1", res("watch", "ns", "flunders", "", "")},
		// Query booleans read as Kubernetes reads them: anything but
		// "0" and "false" is true, even an empty value.
		{"GET", g + "/namespaces/ns/flunders?watch=yes", res("watch", "ns", "flunders", "", "")},
		{"GET", g + "/namespaces/ns/flunders?watch", res("watch", "ns", "flunders", "", "")},
		{"GET", g + "/namespaces/ns/flunders?watch=FALSE", res("list", "ns", "flunders", "", "")},
		{"GET", g + "/namespaces/ns/flunders?watch=0", res("list", "ns", "flunders", "", "")},
		{"GET", g + "/watch/namespaces/ns/flunders", res("watch", "ns", "flunders", "", "")},
		{"GET", g + "/watch/flunders", res("watch", "", "flunders", "", "")},

		// A fieldSelector on metadata.name names the object.
		{"GET", g + "/namespaces/ns/flunders?fieldSelector=metadata.name%3Dabc", withFS(res("list", "ns", "flunders", "abc", ""))},
		{"GET", g + "/namespaces/ns/flunders?watch=true&fieldSelector=metadata.name%3D%3Dabc", withFS(res("watch", "ns", "flunders", "abc", ""))},
		{"GET", g + "/namespaces/ns/flunders?fieldSelector=metadata.name%21%3Dabc", res("list", "ns", "flunders", "", "")},
		{"GET", g + "/namespaces/ns/flunders?fieldSelector=metadata.name%3Da%2Fb", res("list", "ns", "flunders", "", "")},
		{"GET", g + "/namespaces/ns/flunders?fieldSelector=metadata.name%3D..", res("list", "ns", "flunders", "", "")},
		{"GET", g + "/namespaces/ns/flunders?fieldSelector=bad", res("list", "ns", "flunders", "", "")},
		{"DELETE", g + "/namespaces/ns/flunders?fieldSelector=metadata.name%3Dabc", res("deletecollection", "ns", "flunders", "", "")},

		// Objects and subresources.
		{"GET", g + "/namespaces/ns/flunders/f", res("get", "ns", "flunders", "f", "")},
		{"PUT", g + "/namespaces/ns/flunders/f", res("update", "ns", "flunders", "f", "")},
		{"PATCH", g + "/namespaces/ns/flunders/f", res("patch", "ns", "flunders", "f", "")},
		{"DELETE", g + "/namespaces/ns/flunders/f", res("delete", "ns", "flunders", "f", "")},
		{"GET", g + "/namespaces/ns/flunders/f/status", res("get", "ns", "flunders", "f", "status")},
		{"PUT", g + "/namespaces/ns/flunders/f/status", res("update", "ns", "flunders", "f", "status")},
		{"PATCH", g + "/namespaces/ns/flunders/f/status", res("patch", "ns", "flunders", "f", "status")},
		{"GET", g + "/fischers/fish", res("get", "", "fischers", "fish", "")},
		{"GET", g + "/watch/namespaces/ns/flunders/f", res("watch", "ns", "flunders", "f", "")},
		{"OPTIONS", g + "/namespaces/ns/flunders/f", res("", "ns", "flunders", "f", "")},

		// The core group and namespaces themselves.
		{"GET", "/api/v1/pods", core("list", "", "pods", "", "")},
		{"GET", "/api/v1/namespaces", core("list", "", "namespaces", "", "")},
		{"GET", "/api/v1/namespaces/x", core("get", "x", "namespaces", "x", "")},
		{"PUT", "/api/v1/namespaces/x/status", core("update", "x", "namespaces", "x", "status")},
		{"PUT", "/api/v1/namespaces/x/finalize", core("update", "x", "namespaces", "x", "finalize")},
		{"GET", "/api/v1/namespaces/x/pods", core("list", "x", "pods", "", "")},
		{"GET", "/api/v1/namespaces/x/pods/p/log", core("get", "x", "pods", "p", "log")},
	} {
		t.Run(tc.method+" "+tc.url, func(t *testing.T) {
			got := *request.DefaultResolver.Resolve(httptest.NewRequest(tc.method, tc.url, nil))
			got.Parts = nil
			if got.Path == "" {
				t.Error("Path is empty")
			}
			got.Path = ""
			if got.IsResourceRequest != tc.want.IsResourceRequest || got.Verb != tc.want.Verb ||
				got.APIPrefix != tc.want.APIPrefix || got.APIGroup != tc.want.APIGroup || got.APIVersion != tc.want.APIVersion ||
				got.Namespace != tc.want.Namespace || got.Resource != tc.want.Resource || got.Name != tc.want.Name ||
				got.Subresource != tc.want.Subresource || got.FieldSelectorName != tc.want.FieldSelectorName {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestResolveEscapedSegments: the path is split at its escaped slashes, as
// the router splits it, and a namespace or name that no object can have is
// refused with kube-apiserver's key-function wording, before any filter
// reads the Info.
func TestResolveEscapedSegments(t *testing.T) {
	const g = "/apis/wardle.example.com/v1beta1"
	for _, tc := range []struct {
		method, url string
		want        request.Info // compared when wantCode is 0
		wantCode    int
		wantMessage string
	}{
		// An escaped "/" stays inside its segment: never namespace "a",
		// resource "b".
		{"GET", g + "/namespaces/a%2Fb/flunders", request.Info{}, 400, `Namespace parameter invalid: "a/b": may not contain '/'`},
		{"GET", g + "/namespaces/%2E%2E/flunders", request.Info{}, 400, `Namespace parameter invalid: "..": may not be '..'`},
		{"GET", g + "/namespaces/%2e/flunders", request.Info{}, 400, `Namespace parameter invalid: ".": may not be '.'`},
		{"DELETE", g + "/namespaces/ns/flunders/%2E%2E", request.Info{}, 400, `Name parameter invalid: "..": may not be '..'`},
		// x%2Fexec is a name, not name x and the exec subresource.
		{"POST", g + "/namespaces/ns/flunders/x%2Fexec", request.Info{}, 400, `Name parameter invalid: "x/exec": may not contain '/'`},
		{"GET", g + "/flunders/a%2F%25b", request.Info{}, 400, `Name parameter invalid: "a/%b": may not contain '/';may not contain '%'`},
		{"GET", g + "/namespaces/ns/flunders%2Fx", request.Info{}, 404, "the server could not find the requested resource"},
		{"GET", g + "/namespaces/ns/flunders/f/%2E%2E", request.Info{}, 404, "the server could not find the requested resource"},
		{"GET", "/apis/wardle.example.com/%2E%2E/flunders", request.Info{}, 404, "the server could not find the requested resource"},
		// Other escapes are the characters they stand for.
		{"GET", g + "/namespaces/n%73/flunders/f%3Ag", res("get", "ns", "flunders", "f:g", ""), 0, ""},
		{"GET", "/ap%69s/wardle.example.com/v1beta1/flunders", res("list", "", "flunders", "", ""), 0, ""},
		{"GET", g + "/namespaces/ns/flunders/f/st%61tus", res("get", "ns", "flunders", "f", "status"), 0, ""},
	} {
		t.Run(tc.method+" "+tc.url, func(t *testing.T) {
			got := request.DefaultResolver.Resolve(httptest.NewRequest(tc.method, tc.url, nil))
			if tc.wantCode == 0 {
				if err := got.Err(); err != nil {
					t.Fatalf("Err = %v", err)
				}
				if got.Namespace != tc.want.Namespace || got.Resource != tc.want.Resource || got.Name != tc.want.Name ||
					got.Subresource != tc.want.Subresource || got.Verb != tc.want.Verb || !got.IsResourceRequest {
					t.Errorf("got  %+v\nwant %+v", *got, tc.want)
				}
				return
			}
			var se *meta.StatusError
			if !errors.As(got.Err(), &se) {
				t.Fatalf("Err = %v, want a StatusError (Info %+v)", got.Err(), *got)
			}
			if int(se.ErrStatus.Code) != tc.wantCode || se.ErrStatus.Message != tc.wantMessage {
				t.Errorf("Err = %d %q, want %d %q", se.ErrStatus.Code, se.ErrStatus.Message, tc.wantCode, tc.wantMessage)
			}
		})
	}
}

// TestResolveAgreesWithRouter: for any path the router (http.ServeMux, with
// the patterns the endpoints install) serves, the Info names the same
// namespace, resource, name and subresource.
func TestResolveAgreesWithRouter(t *testing.T) {
	for _, target := range []string{
		"/apis/g/v/namespaces/ns/things/a",
		"/apis/g/v/namespaces/a%2Fb/things/c",
		"/apis/g/v/namespaces/%2E%2E/things",
		"/apis/g/v/namespaces/ns/things/x%2Fexec",
		"/apis/g/v/namespaces/ns/things/x%2Fexec/status",
		"/apis/g/v/namespaces/ns/things/%2e%2e/status",
		"/apis/g/v/namespaces/n%73/th%69ngs/%61",
		"/apis/g/v/things/a%252Fb",
		"/apis/g/v/namespaces/ns/things/a/status",
	} {
		routerAgrees(t, "GET", target)
	}
}

// routerAgrees fails t when the router serves target with path values that
// the Info of target does not carry, unless the Info refuses the path.
func routerAgrees(t *testing.T, method, target string) {
	t.Helper()
	mux := http.NewServeMux()
	var got map[string]string
	record := func(names ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			got = map[string]string{}
			for _, n := range names {
				got[n] = r.PathValue(n)
			}
		}
	}
	// The shapes of the routes endpoints.Install adds, for a resource
	// "things" ("status" stands for any subresource).
	mux.Handle("/apis/{group}/{version}/namespaces/{namespace}/things", record("namespace"))
	mux.Handle("/apis/{group}/{version}/namespaces/{namespace}/things/{name}", record("namespace", "name"))
	mux.Handle("/apis/{group}/{version}/namespaces/{namespace}/things/{name}/{sub}", record("namespace", "name", "sub"))
	mux.Handle("/apis/{group}/{version}/things/{name}", record("name"))
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return
	}
	r := &http.Request{Method: method, URL: u, Header: http.Header{}, Host: "x"}
	info := request.DefaultResolver.Resolve(r)
	if info.Err() != nil {
		return // refused before the router
	}
	mux.ServeHTTP(httptest.NewRecorder(), r)
	if got == nil {
		return // not routed
	}
	if !info.IsResourceRequest {
		t.Fatalf("%s %s: routed with %v, but the Info is a non-resource request", method, target, got)
	}
	if info.Resource != "things" {
		t.Fatalf("%s %s: routed to things, but the Info names resource %q", method, target, info.Resource)
	}
	want := map[string]string{"namespace": info.Namespace, "name": info.Name, "sub": info.Subresource}
	for k, v := range got {
		if want[k] != v {
			t.Fatalf("%s %s: the router reads %s %q, the Info %q (%+v)", method, target, k, v, want[k], *info)
		}
	}
}

func res(verb, ns, resource, name, sub string) request.Info {
	return request.Info{IsResourceRequest: true, Verb: verb, APIPrefix: "apis", APIGroup: "wardle.example.com", APIVersion: "v1beta1",
		Namespace: ns, Resource: resource, Name: name, Subresource: sub}
}

func core(verb, ns, resource, name, sub string) request.Info {
	return request.Info{IsResourceRequest: true, Verb: verb, APIPrefix: "api", APIVersion: "v1",
		Namespace: ns, Resource: resource, Name: name, Subresource: sub}
}

func withFS(i request.Info) request.Info {
	i.FieldSelectorName = true
	return i
}

func TestInfoPredicates(t *testing.T) {
	for _, tc := range []struct {
		info                  request.Info
		longRunning, mutating bool
	}{
		{request.Info{Verb: "watch"}, true, false},
		{request.Info{Verb: "list"}, false, false},
		{request.Info{Verb: "get", Subresource: "log"}, true, false},
		{request.Info{Verb: "create", Subresource: "exec"}, true, true},
		{request.Info{Verb: "get", Subresource: "proxy"}, true, false},
		{request.Info{Verb: "update", Subresource: "status"}, false, true},
		{request.Info{Verb: "patch"}, false, true},
		{request.Info{Verb: "delete"}, false, true},
		{request.Info{Verb: "deletecollection"}, false, true},
		{request.Info{Verb: "post"}, false, true},
		{request.Info{Verb: "get"}, false, false},
	} {
		if got := tc.info.IsLongRunning(); got != tc.longRunning {
			t.Errorf("%+v IsLongRunning = %v", tc.info, got)
		}
		if got := tc.info.IsMutating(); got != tc.mutating {
			t.Errorf("%+v IsMutating = %v", tc.info, got)
		}
	}
}

func TestInfoContext(t *testing.T) {
	if _, ok := request.InfoFrom(context.Background()); ok {
		t.Error("InfoFrom an empty context: ok")
	}
	info := request.DefaultResolver.Resolve(httptest.NewRequest(http.MethodGet, "/apis/g/v/things", nil))
	got, ok := request.InfoFrom(request.WithInfo(context.Background(), info))
	if !ok || got != info {
		t.Errorf("InfoFrom = %v %v", got, ok)
	}
	if _, ok := request.InfoFrom(request.WithInfo(context.Background(), nil)); ok {
		t.Error("InfoFrom a nil Info: ok")
	}
}

func BenchmarkResolve(b *testing.B) {
	r := httptest.NewRequest(http.MethodGet, "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders?watch=true&labelSelector=a%3Db", nil)
	b.ReportAllocs()
	for b.Loop() {
		request.DefaultResolver.Resolve(r)
	}
}

// TestQuery checks that the query is parsed once per request, for the
// request it was parsed from only.
func TestQuery(t *testing.T) {
	r := httptest.NewRequest("GET", "/apis/wardle.example.com/v1beta1/flunders?limit=5&watch=1", nil)
	info := request.DefaultResolver.Resolve(r)
	if info.Query.Get("limit") != "5" || info.Verb != "watch" {
		t.Fatalf("Info: %+v", info)
	}
	r = r.WithContext(request.WithInfo(r.Context(), info))
	if q := request.Query(r); q.Get("limit") != "5" {
		t.Errorf("Query: %v", q)
	}
	info.Query.Set("limit", "6") // visible only if Query returns the Info's parse
	if q := request.Query(r); q.Get("limit") != "6" {
		t.Errorf("Query parsed the query again: %v", q)
	}
	r.URL.RawQuery = "limit=7"
	if q := request.Query(r); q.Get("limit") != "7" {
		t.Errorf("Query after the URL changed: %v, want a fresh parse", q)
	}
	if q := request.Query(httptest.NewRequest("GET", "/apis/wardle.example.com/v1beta1/flunders", nil)); q != nil {
		t.Errorf("no query: %v, want nil", q)
	}
	if q := request.Query(httptest.NewRequest("GET", "/x?a=b", nil)); q.Get("a") != "b" {
		t.Errorf("without an Info: %v", q)
	}
}

// FuzzResolve: any method and path (client input) resolves without a
// panic, and a resource request names a version and a resource, and a
// namespace and name that are path segments (no "/", never "." or "..").
//
//	go test ./request -run - -fuzz FuzzResolve -fuzztime 30s
func FuzzResolve(f *testing.F) {
	for _, s := range []struct{ method, target string }{
		{"GET", "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders/a/status"},
		{"GET", "/api/v1/namespaces/ns"},
		{"GET", "/apis/g/v/watch/namespaces/ns/things?fieldSelector=metadata.name%3Dx"},
		{"DELETE", "/apis/g/v/namespaces/ns/things"},
		{"POST", "/apis/g/v/namespaces/../things/.."},
		{"GET", "/apis/g/v/namespaces/%2E%2E/things/a%2Fb/exec"},
		{"PATCH", "/apis//v//things"},
		{"GET", "/openapi/v3/apis/g/v"},
	} {
		f.Add(s.method, s.target)
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || method == "" || strings.ContainsAny(method, " \t\r\n") {
			return
		}
		r := &http.Request{Method: method, URL: u, Header: http.Header{}}
		info := request.DefaultResolver.Resolve(r)
		if info == nil {
			t.Fatalf("Resolve(%s %s) = nil", method, target)
		}
		if !info.IsResourceRequest {
			return
		}
		if info.APIVersion == "" || info.Resource == "" {
			t.Fatalf("Resolve(%s %s) = %+v: a resource request without a version or resource", method, target, info)
		}
		// Only a method Kubernetes has no verb for has none (as in
		// kube-apiserver; the router then answers 405).
		switch method {
		case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE":
			if info.Verb == "" {
				t.Fatalf("Resolve(%s %s) = %+v: no verb", method, target, info)
			}
		}
		if info.Err() != nil {
			return
		}
		for _, seg := range []string{info.Namespace, info.Name} {
			if strings.Contains(seg, "/") || seg == "." || seg == ".." {
				t.Fatalf("Resolve(%s %s) = %+v: %q is not a path segment", method, target, info, seg)
			}
		}
		routerAgrees(t, method, target)
	})
}
