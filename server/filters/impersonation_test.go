package filters_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/internal/race"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server/filters"
)

// impersonationPolicy lets alice impersonate bob, the service account
// ns/robot and system:anonymous, the group dev, the extra scopes=read and
// the UID u-2; it records what it was asked.
type impersonationPolicy struct{ asked []authz.Attributes }

func (p *impersonationPolicy) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	p.asked = append(p.asked, a)
	if a.User.Name != "alice" || a.Verb != "impersonate" || !a.ResourceRequest {
		return authz.DecisionNoOpinion, "", nil
	}
	allowed := map[string]bool{
		"/users//bob": true, "/users//system:anonymous": true, "/serviceaccounts/ns/robot": true, "/groups//dev": true,
		"authentication.k8s.io/userextras/scopes//read": true, "authentication.k8s.io/userextras/example.com/scopes//read": true,
		"authentication.k8s.io/uids//u-2": true,
	}
	key := a.APIGroup + "/" + a.Resource
	if a.Subresource != "" {
		key += "/" + a.Subresource
	}
	key += "/" + a.Namespace + "/" + a.Name
	if allowed[key] {
		return authz.DecisionAllow, "", nil
	}
	return authz.DecisionNoOpinion, "no RBAC policy matched", nil
}

func TestImpersonation(t *testing.T) {
	alice := &authn.User{Name: "alice", Groups: []string{"system:authenticated"}}
	type seen struct {
		user    *authn.User
		headers http.Header
	}
	for _, tc := range []struct {
		name    string
		headers http.Header
		want    *authn.User // nil: the request is refused
		code    int
		message string
	}{
		{name: "no impersonation", headers: http.Header{}, want: alice},
		{name: "a user", headers: http.Header{"Impersonate-User": {"bob"}},
			want: &authn.User{Name: "bob", Groups: []string{"system:authenticated"}}},
		{name: "a user in a group", headers: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"dev"}},
			want: &authn.User{Name: "bob", Groups: []string{"dev", "system:authenticated"}}},
		{name: "extra and UID", headers: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Extra-Scopes": {"read"}, "Impersonate-Uid": {"u-2"}},
			want: &authn.User{Name: "bob", UID: "u-2", Groups: []string{"system:authenticated"}, Extra: map[string][]string{"scopes": {"read"}}}},
		{name: "a service account gets its groups", headers: http.Header{"Impersonate-User": {"system:serviceaccount:ns:robot"}},
			want: &authn.User{Name: "system:serviceaccount:ns:robot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"}}},
		{name: "anonymous is unauthenticated", headers: http.Header{"Impersonate-User": {"system:anonymous"}},
			want: &authn.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}},
		{name: "a user not allowed", headers: http.Header{"Impersonate-User": {"carol"}}, code: 403,
			message: `users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope: no RBAC policy matched`},
		{name: "a group not allowed", headers: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"dev", "system:masters"}}, code: 403,
			message: `groups "system:masters" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope: no RBAC policy matched`},
		{name: "an extra value not allowed", headers: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Extra-Scopes": {"read", "write"}}, code: 403,
			message: `userextras.authentication.k8s.io "write" is forbidden: User "alice" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope: no RBAC policy matched`},
		{name: "a UID not allowed", headers: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Uid": {"u-0"}}, code: 403,
			message: `uids.authentication.k8s.io "u-0" is forbidden: User "alice" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope: no RBAC policy matched`},
		{name: "another namespace's service account", headers: http.Header{"Impersonate-User": {"system:serviceaccount:kube-system:robot"}}, code: 403,
			message: `serviceaccounts "robot" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kube-system": no RBAC policy matched`},
		{name: "groups without a user", headers: http.Header{"Impersonate-Group": {"dev"}}, code: 400,
			message: "requested impersonation of groups, a UID or extra values without impersonating a user (Impersonate-User)"},
		{name: "extra without a user", headers: http.Header{"Impersonate-Extra-Scopes": {"read"}}, code: 400,
			message: "requested impersonation of groups, a UID or extra values without impersonating a user (Impersonate-User)"},
		{name: "an extra header without a key", headers: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Extra-": {"x"}}, code: 400,
			message: "Impersonate-Extra-<key> headers need a key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *seen
			h := filters.WithImpersonation(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				u, _ := authn.UserFrom(r.Context())
				got = &seen{user: u, headers: r.Header.Clone()}
			}), &impersonationPolicy{})
			r := httptest.NewRequest("GET", "/apis/g/v/things", nil)
			for k, v := range tc.headers {
				r.Header[k] = v
			}
			r = r.WithContext(authn.WithUser(r.Context(), alice))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if tc.want == nil {
				reason := meta.StatusReasonForbidden
				if tc.code == 400 {
					reason = meta.StatusReasonBadRequest
				}
				status(t, rec, tc.code, reason, tc.message)
				if got != nil {
					t.Error("the handler ran")
				}
				return
			}
			if got == nil {
				t.Fatalf("refused: %d %s", rec.Code, rec.Body)
			}
			u := got.user
			if u.Name != tc.want.Name || u.UID != tc.want.UID || !slices.Equal(u.Groups, tc.want.Groups) || len(u.Extra) != len(tc.want.Extra) {
				t.Errorf("user %+v, want %+v", u, tc.want)
			}
			for k, v := range tc.want.Extra {
				if !slices.Equal(u.Extra[k], v) {
					t.Errorf("extra %s = %v, want %v", k, u.Extra[k], v)
				}
			}
			for name := range got.headers {
				if strings.HasPrefix(name, "Impersonate-") {
					t.Errorf("header %s reached the handler", name)
				}
			}
		})
	}

	t.Run("the order and attributes asked", func(t *testing.T) {
		p := &impersonationPolicy{}
		h := filters.WithImpersonation(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), p)
		r := httptest.NewRequest("GET", "/", nil)
		r.Header["Impersonate-User"] = []string{"bob"}
		r.Header["Impersonate-Group"] = []string{"dev"}
		r.Header["Impersonate-Extra-Example.com%2fscopes"] = []string{"read"}
		r.Header["Impersonate-Uid"] = []string{"u-2"}
		h.ServeHTTP(httptest.NewRecorder(), r.WithContext(authn.WithUser(r.Context(), alice)))
		var got []string
		for _, a := range p.asked {
			got = append(got, strings.Join([]string{a.Verb, a.APIGroup, a.Resource, a.Subresource, a.Namespace, a.Name}, "|"))
		}
		want := []string{"impersonate||users|||bob", "impersonate||groups|||dev",
			"impersonate|authentication.k8s.io|userextras|example.com/scopes||read", "impersonate|authentication.k8s.io|uids|||u-2"}
		if !slices.Equal(got, want) {
			t.Errorf("asked\n%q\nwant\n%q", got, want)
		}
	})
}

func TestImpersonationExtraKey(t *testing.T) {
	for _, tc := range []struct {
		header, key string
		ok          bool
	}{
		{"Impersonate-Extra-Scopes", "scopes", true},
		{"impersonate-extra-SCOPES", "scopes", true},
		{"Impersonate-Extra-Example.com%2fscopes", "example.com/scopes", true},
		{"Impersonate-Extra-Bad%zz", "bad%zz", true}, // not validly escaped: as it is
		{"Impersonate-Extra-", "", true},
		{"Impersonate-User", "", false},
		{"Impersonate-Extr", "", false},
		{"X-Impersonate-Extra-A", "", false},
	} {
		key, ok := filters.ImpersonationExtraKey(tc.header)
		if key != tc.key || ok != tc.ok {
			t.Errorf("ImpersonationExtraKey(%q) = %q, %v; want %q, %v", tc.header, key, ok, tc.key, tc.ok)
		}
	}
}

// FuzzImpersonationExtraKey checks the Impersonate-Extra-<key> parser: the
// key of a header name is lower-case unless an escape made it otherwise,
// and a key escaped the way client-go escapes it comes back unchanged.
func FuzzImpersonationExtraKey(f *testing.F) {
	for _, s := range []string{"Impersonate-Extra-Scopes", "Impersonate-Extra-Example.com%2fscopes", "impersonate-extra-%", "Impersonate-Extra-%E2%82%AC", "Impersonate-Extra-%zz", "Impersonate-User"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		key, ok := filters.ImpersonationExtraKey(header)
		if !ok {
			if len(header) >= 18 && strings.EqualFold(header[:18], "Impersonate-Extra-") {
				t.Fatalf("%q not recognised", header)
			}
			return
		}
		if !strings.Contains(header, "%") && key != strings.ToLower(header[18:]) {
			t.Fatalf("%q gave key %q", header, key)
		}
		// What client-go sends for a key comes back as that key.
		if key == strings.ToLower(key) {
			escaped := escapeExtraKey(key)
			if back, ok := filters.ImpersonationExtraKey(http.CanonicalHeaderKey("Impersonate-Extra-" + escaped)); !ok || back != key {
				t.Fatalf("key %q escaped as %q came back as %q", key, escaped, back)
			}
		}
	})
}

// escapeExtraKey escapes a key as client-go does: every byte that is not
// legal in a header name token, and %, as %XX.
func escapeExtraKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '%' || !isTokenChar(c) {
			b.WriteString("%")
			b.WriteString(strings.ToUpper(string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isTokenChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("!#$&'*+-.^_`|~", c) >= 0
}

// TestImpersonationAllocations: a request that impersonates nobody passes
// the filter without an allocation (its parse was one before).
func TestImpersonationAllocations(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates on its own")
	}
	h := filters.WithImpersonation(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), authz.AlwaysDeny())
	r := httptest.NewRequest("GET", "/apis/g/v/things", nil)
	r.Header.Set("Accept", "application/json")
	r.Header.Set("User-Agent", "kubectl")
	w := &nopWriter{header: http.Header{}}
	if allocs := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }); allocs > 0 {
		t.Errorf("%v allocations per request, want 0", allocs)
	}
}
