package aggregator

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
)

func TestParseServiceEndpoints(t *testing.T) {
	r, err := ParseServiceEndpoints([]string{"wardle/api=127.0.0.1:8444", "wardle/api:8443=127.0.0.1:9443", "other/svc=localhost:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ns, name string
		port     int32
		want     string
		reason   string
	}{
		{"wardle", "api", 443, "https://127.0.0.1:8444", ""},
		{"wardle", "api", 8443, "https://127.0.0.1:9443", ""},
		{"other", "svc", 443, "https://localhost:1", ""},
		{"wardle", "nope", 443, "", ReasonServiceNotFound},
	} {
		u, err := r.ResolveEndpoint(tc.ns, tc.name, tc.port)
		switch {
		case tc.reason != "":
			if err == nil || reasonFor(err) != tc.reason {
				t.Errorf("%s/%s:%d: %v, want reason %s", tc.ns, tc.name, tc.port, err, tc.reason)
			}
		case err != nil || u.String() != tc.want:
			t.Errorf("%s/%s:%d = %v, %v; want %s", tc.ns, tc.name, tc.port, u, err, tc.want)
		}
	}
	for _, bad := range []string{"wardle/api", "api=127.0.0.1:1", "wardle/api=127.0.0.1", "wardle/api=127.0.0.1:0",
		"wardle/api:x=127.0.0.1:1", "/api=h:1", "a/b/c=h:1", "wardle/api=:8443"} {
		if _, err := ParseServiceEndpoints([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseServiceEndpoints([]string{"a/b=h:1", "a/b=h:2"}); err == nil {
		t.Error("a service given twice was accepted")
	}
}

// lister is a ServiceLister over fixed objects.
type lister struct {
	services  map[string]*Service
	endpoints map[string][]Endpoint
	err       error
}

func (l lister) Service(ns, name string) (*Service, error) {
	if l.err != nil {
		return nil, l.err
	}
	s, ok := l.services[ns+"/"+name]
	if !ok {
		return nil, ErrServiceNotFound
	}
	return s, nil
}

func (l lister) Endpoints(ns, name string) ([]Endpoint, error) { return l.endpoints[ns+"/"+name], nil }

func TestClusterResolvers(t *testing.T) {
	l := lister{
		services: map[string]*Service{
			"w/api":      {ClusterIP: "10.0.0.7", Ports: []ServicePort{{Name: "https", Port: 443}}},
			"w/headless": {ClusterIP: "None", Ports: []ServicePort{{Name: "https", Port: 443}}},
			"w/ext":      {Type: "ExternalName", ExternalName: "localhost"},
			"w/empty":    {ClusterIP: "10.0.0.8", Ports: []ServicePort{{Name: "https", Port: 443}}},
		},
		endpoints: map[string][]Endpoint{
			"w/api":      {{Address: "127.0.0.1", Ports: map[string]int32{"https": 8444}}},
			"w/headless": {{Address: "127.0.0.1", Ports: map[string]int32{"https": 8445}}},
		},
	}
	cluster, endpoints := NewClusterIPResolver(l), NewEndpointResolver(l)
	for _, tc := range []struct {
		r        ServiceResolver
		svc      string
		port     int32
		want     string
		wantErr  string
		wantKind string
	}{
		{cluster, "w/api", 443, "https://10.0.0.7:443", "", ""},
		{endpoints, "w/api", 443, "https://127.0.0.1:8444", "", ""},
		{endpoints, "w/headless", 443, "https://127.0.0.1:8445", "", ""},
		{cluster, "w/ext", 443, "https://localhost:443", "", ""},
		{endpoints, "w/ext", 8443, "https://localhost:8443", "", ""},
		{cluster, "w/headless", 443, "", "has no cluster IP", ReasonServiceAccessError},
		{cluster, "w/api", 80, "", "has no port 80", ReasonServicePortError},
		{endpoints, "w/empty", 443, "", "no ready endpoints", ReasonMissingEndpoints},
		{endpoints, "w/none", 443, "", "service not found", ReasonServiceNotFound},
	} {
		ns, name, _ := strings.Cut(tc.svc, "/")
		u, err := tc.r.ResolveEndpoint(ns, name, tc.port)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || reasonFor(err) != tc.wantKind {
				t.Errorf("%s:%d: %v, want %q (%s)", tc.svc, tc.port, err, tc.wantErr, tc.wantKind)
			}
			continue
		}
		if err != nil || u.String() != tc.want {
			t.Errorf("%s:%d = %v, %v; want %s", tc.svc, tc.port, u, err, tc.want)
		}
	}
	if _, err := NewClusterIPResolver(lister{err: errors.New("forbidden")}).ResolveEndpoint("w", "api", 443); reasonFor(err) != ReasonServiceAccessError {
		t.Errorf("a lister error: %v", err)
	}
	self, _ := url.Parse("https://127.0.0.1:6443")
	loop := NewLoopbackResolver(cluster, self)
	if u, err := loop.ResolveEndpoint("default", "kubernetes", 443); err != nil || u.String() != "https://127.0.0.1:6443" {
		t.Errorf("loopback: %v %v", u, err)
	}
	if u, err := loop.ResolveEndpoint("w", "api", 443); err != nil || u.String() != "https://10.0.0.7:443" {
		t.Errorf("through the loopback resolver: %v %v", u, err)
	}
}

func TestValidateAPIService(t *testing.T) {
	port := func(p int32) *int32 { return &p }
	valid := func() *APIService {
		return &APIService{ObjectMeta: meta.ObjectMeta{Name: "v1beta1.wardle.example.com"}, Spec: APIServiceSpec{
			Group: "wardle.example.com", Version: "v1beta1", CABundle: []byte("pem"),
			Service:              &ServiceReference{Namespace: "wardle", Name: "api", Port: port(443)},
			GroupPriorityMinimum: 1000, VersionPriority: 15}}
	}
	if errs := ValidateAPIService(valid()); len(errs) != 0 {
		t.Fatalf("valid: %v", errs)
	}
	for name, tc := range map[string]struct {
		mutate func(*APIService)
		want   string
	}{
		"name":            {func(a *APIService) { a.Name = "wardle" }, "metadata.name: Invalid value: \"wardle\": must be `spec.version+\".\"+spec.group`"},
		"no version":      {func(a *APIService) { a.Spec.Version = ""; a.Name = ".wardle.example.com" }, "spec.version: Required value"},
		"empty group":     {func(a *APIService) { a.Spec.Group = ""; a.Name = "v1beta1." }, "only v1 may have an empty group"},
		"group priority":  {func(a *APIService) { a.Spec.GroupPriorityMinimum = 0 }, "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000"},
		"version prio":    {func(a *APIService) { a.Spec.VersionPriority = 1001 }, "spec.versionPriority: Invalid value: 1001"},
		"port":            {func(a *APIService) { a.Spec.Service.Port = port(70000) }, "spec.service.port: Invalid value: 70000"},
		"namespace":       {func(a *APIService) { a.Spec.Service.Namespace = "" }, "spec.service.namespace: Required value"},
		"insecure and CA": {func(a *APIService) { a.Spec.InsecureSkipTLSVerify = true }, "may not be true if caBundle is present"},
		"local with CA":   {func(a *APIService) { a.Spec.Service = nil }, "local APIServices may not have a caBundle"},
	} {
		a := valid()
		tc.mutate(a)
		if errs := ValidateAPIService(a); !strings.Contains(errs.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, errs, tc.want)
		}
	}
}

func TestSortedGroups(t *testing.T) {
	e := func(g, v string, gp, vp int32) gvEntry {
		return gvEntry{gv: meta.GroupVersion{Group: g, Version: v}, groupPriority: gp, versionPriority: vp}
	}
	groups := sortedGroups([]gvEntry{
		e("b.example.com", "v1", 1000, 15), e("a.example.com", "v1", 1000, 15), e("z.example.com", "v1alpha1", 1000, 10),
		e("z.example.com", "v2", 3000, 10), e("z.example.com", "v1", 1000, 10), e("z.example.com", "v1beta2", 1000, 10),
		e("z.example.com", "v10beta1", 1000, 10), e("z.example.com", "foo10", 1000, 10), e("z.example.com", "foo1", 1000, 10),
		e("z.example.com", "v3alpha1", 1000, 20), e("", "v1", 18000, 1),
	})
	var got []string
	for _, g := range groups {
		var vs []string
		for _, v := range g.versions {
			vs = append(vs, v.gv.Version)
		}
		got = append(got, g.name+"="+strings.Join(vs, ","))
	}
	want := []string{
		// z's priority is its highest version's (3000); v3alpha1 has the highest versionPriority.
		"z.example.com=v3alpha1,v2,v1,v10beta1,v1beta2,v1alpha1,foo1,foo10",
		"a.example.com=v1", "b.example.com=v1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestSetProxyHeaders(t *testing.T) {
	h := http.Header{
		"X-Remote-User":         {"mallory"},
		"X-Remote-Extra-Scopes": {"all"},
		"X-REMOTE-GROUP":        {"system:masters"},
		"Accept":                {"application/json"},
	}
	SetProxyHeaders(h, &authn.User{Name: "bob", Groups: []string{"a", "b"},
		Extra: map[string][]string{"alpha/beta": {"1"}, "ünï": {"2"}}})
	want := http.Header{
		"Accept":                       {"application/json"},
		"X-Remote-User":                {"bob"},
		"X-Remote-Group":               {"a", "b"},
		"X-Remote-Extra-Alpha%2fbeta":  {"1"},
		"X-Remote-Extra-%C3%BCn%C3%AF": {"2"},
	}
	if len(h) != len(want) {
		t.Errorf("headers %v, want %v", h, want)
	}
	for k, v := range want {
		if !slices.Equal(h.Values(k), v) {
			t.Errorf("%s = %q, want %q", k, h.Values(k), v)
		}
	}
	for key := range map[string]bool{"alpha/beta": true, "ünï": true, "a%b": true} {
		if got := authn.UnescapeExtraKey(strings.ToLower(escapeExtraKey(key))); got != key {
			t.Errorf("%q escaped and read back: %q", key, got)
		}
	}
}
