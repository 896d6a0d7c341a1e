package server_test

import (
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz/rbac"
	"github.com/apikit-dev/apikit/server"
)

// send serves one request through the whole handler chain of h.
func send(t testing.TB, h http.Handler, method, path, contentType, body string) int {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec.Code
}

// scrape reads /metrics through h and parses it with Prometheus's text
// parser, as a scraper does.
func scrape(t testing.TB, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := get(t, h, "/metrics", "text/plain")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// series renders a metric's labels as name=value pairs, sorted, for lookups.
func series(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// TestMetricsCountsRequests: after known traffic, /metrics holds the
// series kube-apiserver would, with its labels and buckets, and nothing
// a client could mint by asking for made-up paths or methods.
func TestMetricsCountsRequests(t *testing.T) {
	s := newServer(t, "test", server.NewEmptyDelegate())
	if err := s.InstallAPIGroup(widgetGroup(t, "test.example.com")); err != nil {
		t.Fatal(err)
	}
	h := s.Handler
	const ns = "/apis/test.example.com/v1/namespaces/ns1/widgets"
	traffic := []struct {
		method, path, contentType, body string
		code                            int
	}{
		{"POST", ns, "application/json", `{"apiVersion":"test.example.com/v1","kind":"Widget","metadata":{"name":"a"}}`, 201},
		{"POST", ns + "?dryRun=All", "application/json", `{"apiVersion":"test.example.com/v1","kind":"Widget","metadata":{"name":"b"}}`, 201},
		{"GET", ns + "/a", "", "", 200},
		{"GET", ns + "/a", "", "", 200},
		{"GET", ns + "/missing", "", "", 404},
		{"GET", ns, "", "", 200},
		{"GET", "/apis/test.example.com/v1/gadgets", "", "", 200},
		{"PATCH", ns + "/a", "application/merge-patch+json", `{"spec":{"size":2}}`, 200},
		{"DELETE", ns + "/a", "", "", 200},
		// Made-up resources, groups and paths reach no route: no series of their own.
		{"GET", "/apis/test.example.com/v1/nosuch1", "", "", 404},
		{"GET", "/apis/test.example.com/v1/nosuch2", "", "", 404},
		{"GET", "/apis/nosuch.example.com/v1/things", "", "", 404},
		{"GET", "/no/such/path", "", "", 404},
		{"BREW", ns, "", "", 405},
		{"GET", "/healthz", "", "", 200},
	}
	for _, tc := range traffic {
		if got := send(t, h, tc.method, tc.path, tc.contentType, tc.body); got != tc.code {
			t.Fatalf("%s %s: %d, want %d", tc.method, tc.path, got, tc.code)
		}
	}
	fams := scrape(t, h)

	total := map[string]float64{}
	for _, m := range fams["apiserver_request_total"].GetMetric() {
		total[series(m)] = m.GetCounter().GetValue()
	}
	want := map[string]float64{
		"code=201,component=apiserver,dry_run=,group=test.example.com,resource=widgets,scope=resource,subresource=,verb=POST,version=v1":    1,
		"code=201,component=apiserver,dry_run=All,group=test.example.com,resource=widgets,scope=resource,subresource=,verb=POST,version=v1": 1,
		"code=200,component=apiserver,dry_run=,group=test.example.com,resource=widgets,scope=resource,subresource=,verb=GET,version=v1":     2,
		"code=404,component=apiserver,dry_run=,group=test.example.com,resource=widgets,scope=resource,subresource=,verb=GET,version=v1":     1,
		"code=200,component=apiserver,dry_run=,group=test.example.com,resource=widgets,scope=namespace,subresource=,verb=LIST,version=v1":   1,
		"code=200,component=apiserver,dry_run=,group=test.example.com,resource=gadgets,scope=cluster,subresource=,verb=LIST,version=v1":     1,
		"code=200,component=apiserver,dry_run=,group=test.example.com,resource=widgets,scope=resource,subresource=,verb=PATCH,version=v1":   1,
		"code=200,component=apiserver,dry_run=,group=test.example.com,resource=widgets,scope=resource,subresource=,verb=DELETE,version=v1":  1,
		// The three made-up resources and groups share one series.
		"code=404,component=apiserver,dry_run=,group=,resource=,scope=cluster,subresource=,verb=LIST,version=":    3,
		"code=404,component=,dry_run=,group=,resource=,scope=,subresource=,verb=GET,version=":                     1,
		"code=405,component=apiserver,dry_run=,group=,resource=,scope=namespace,subresource=,verb=other,version=": 1,
		"code=200,component=,dry_run=,group=,resource=,scope=,subresource=/healthz,verb=GET,version=":             1,
	}
	for k, v := range want {
		if total[k] != v {
			t.Errorf("apiserver_request_total{%s} = %v, want %v", k, total[k], v)
		}
	}
	for k, v := range total {
		if _, ok := want[k]; !ok && !strings.Contains(k, "subresource=/metrics") {
			t.Errorf("unexpected series apiserver_request_total{%s} = %v", k, v)
		}
	}

	var gets *dto.Histogram
	for _, m := range fams["apiserver_request_duration_seconds"].GetMetric() {
		if s := series(m); s == "component=apiserver,dry_run=,group=test.example.com,resource=widgets,scope=resource,subresource=,verb=GET,version=v1" {
			gets = m.GetHistogram()
		}
	}
	if gets == nil {
		t.Fatal("no apiserver_request_duration_seconds series for the GETs of widgets")
	}
	if gets.GetSampleCount() != 3 {
		t.Errorf("duration histogram of widget GETs counts %d, want 3", gets.GetSampleCount())
	}
	var bounds []float64
	for _, b := range gets.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	// kube-apiserver's buckets, and the +Inf one the exposition adds.
	kube := []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60, math.Inf(1)}
	if !equalFloats(bounds, kube) {
		t.Errorf("duration buckets %v, want kube-apiserver's %v", bounds, kube)
	}

	sizes := map[string]*dto.Histogram{}
	for _, m := range fams["apiserver_response_sizes"].GetMetric() {
		sizes[series(m)] = m.GetHistogram()
	}
	getSizes := sizes["component=apiserver,group=test.example.com,resource=widgets,scope=resource,subresource=,verb=GET,version=v1"]
	if getSizes.GetSampleCount() != 3 || getSizes.GetSampleSum() <= 0 {
		t.Errorf("response sizes of widget GETs: %d samples summing to %v, want 3 of some bytes", getSizes.GetSampleCount(), getSizes.GetSampleSum())
	}
	bounds = bounds[:0]
	for _, b := range getSizes.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	if want := []float64{1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, math.Inf(1)}; !equalFloats(bounds, want) {
		t.Errorf("size buckets %v, want %v", bounds, want)
	}
	for k := range sizes {
		if !strings.Contains(k, "verb=GET") && !strings.Contains(k, "verb=LIST") {
			t.Errorf("apiserver_response_sizes has a series of a write: %s", k)
		}
	}

	for _, name := range []string{"apiserver_current_inflight_requests", "go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	inflight := map[string]float64{}
	for _, m := range fams["apiserver_current_inflight_requests"].GetMetric() {
		inflight[series(m)] = m.GetGauge().GetValue()
	}
	// The scrape itself is the one read in flight.
	if inflight["request_kind=readOnly"] != 1 || inflight["request_kind=mutating"] != 0 {
		t.Errorf("apiserver_current_inflight_requests = %v, want the scrape alone", inflight)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMetricsPerServer: two servers in one process count their own
// requests only.
func TestMetricsPerServer(t *testing.T) {
	a := newServer(t, "a", server.NewEmptyDelegate())
	b := newServer(t, "b", server.NewEmptyDelegate())
	for range 3 {
		send(t, a.Handler, "GET", "/version", "", "")
	}
	count := func(s *server.GenericServer) float64 {
		for _, m := range scrape(t, s.Handler)["apiserver_request_total"].GetMetric() {
			if strings.Contains(series(m), "subresource=/version,") {
				return m.GetCounter().GetValue()
			}
		}
		return 0
	}
	if got := count(a); got != 3 {
		t.Errorf("server a counted %v GET /version, want 3", got)
	}
	if got := count(b); got != 0 {
		t.Errorf("server b counted %v GET /version of server a, want 0", got)
	}
}

// TestMetricsAuthorization: /metrics is get on the non-resource URL
// /metrics; under RBAC's default policy an ordinary user gets 403, a member
// of system:monitoring and cluster-admin read it.
func TestMetricsAuthorization(t *testing.T) {
	x := rbac.NewIndex()
	p := rbac.DefaultPolicy()
	for i := range p.ClusterRoles {
		x.PutClusterRole(&p.ClusterRoles[i])
	}
	for i := range p.ClusterRoleBindings {
		x.PutClusterRoleBinding(&p.ClusterRoleBindings[i])
	}
	x.MarkSynced()
	s := newServer(t, "test", server.NewEmptyDelegate(), func(c *server.Config) {
		c.Authorizer = rbac.NewAuthorizer(x)
		c.Authenticator = authn.Func(func(r *http.Request) (*authn.Response, bool, error) {
			groups := append([]string{authn.AllAuthenticated}, r.Header.Values("X-Test-Group")...)
			return &authn.Response{User: authn.User{Name: r.Header.Get("X-Test-User"), Groups: groups}}, true, nil
		})
	})
	for _, tc := range []struct {
		user   string
		groups []string
		code   int
	}{
		{"alice", nil, http.StatusForbidden},
		{"prometheus", []string{rbac.MonitoringGroup}, http.StatusOK},
		{"admin", []string{authn.SystemPrivilegedGroup}, http.StatusOK},
	} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.Header.Set("X-Test-User", tc.user)
		for _, g := range tc.groups {
			r.Header.Add("X-Test-Group", g)
		}
		rec := httptest.NewRecorder()
		s.Handler.ServeHTTP(rec, r)
		if rec.Code != tc.code {
			t.Errorf("%s: GET /metrics answered %d, want %d: %s", tc.user, rec.Code, tc.code, rec.Body)
		}
		if tc.code == http.StatusForbidden && !strings.Contains(rec.Body.String(), `forbidden: User \"alice\" cannot get path \"/metrics\"`) {
			t.Errorf("403 body %s lacks kube-apiserver's message", rec.Body)
		}
		if tc.code == http.StatusOK && !strings.Contains(rec.Body.String(), "# TYPE apiserver_request_total counter") {
			t.Errorf("%s: /metrics body lacks apiserver_request_total", tc.user)
		}
	}
}
