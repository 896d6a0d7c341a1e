package filters_test

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server/filters"
)

// requestSeries lists apiserver_request_total's series as sorted
// name=value pairs.
func requestSeries(t *testing.T, m *metrics.Registry) []string {
	t.Helper()
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fams {
		if f.GetName() != "apiserver_request_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			var parts []string
			for _, l := range s.GetLabel() {
				if l.GetValue() != "" {
					parts = append(parts, l.GetName()+"="+l.GetValue())
				}
			}
			sort.Strings(parts)
			out = append(out, strings.Join(parts, ","))
		}
	}
	return out
}

// TestMetricsLabels: the labels of one request, routed or not, as
// kube-apiserver's metrics name them.
func TestMetricsLabels(t *testing.T) {
	for _, tc := range []struct {
		name, method, url, contentType string
		routed                         string // "" unrouted, "api" a resource route, else a path
		code                           int
		want                           string
	}{
		{"get", "GET", "/apis/g/v1/namespaces/n/things/a", "", "api", 200,
			"code=200,component=apiserver,group=g,resource=things,scope=resource,verb=GET,version=v1"},
		{"list namespaced", "GET", "/apis/g/v1/namespaces/n/things", "", "api", 200,
			"code=200,component=apiserver,group=g,resource=things,scope=namespace,verb=LIST,version=v1"},
		{"list cluster", "GET", "/apis/g/v1/things", "", "api", 200,
			"code=200,component=apiserver,group=g,resource=things,scope=cluster,verb=LIST,version=v1"},
		{"watch param", "GET", "/apis/g/v1/things?watch=true", "", "api", 200,
			"code=200,component=apiserver,group=g,resource=things,scope=cluster,verb=WATCH,version=v1"},
		{"create is POST, scope resource", "POST", "/apis/g/v1/namespaces/n/things", "application/json", "api", 201,
			"code=201,component=apiserver,group=g,resource=things,scope=resource,verb=POST,version=v1"},
		{"update is PUT", "PUT", "/apis/g/v1/things/a/status", "application/json", "api", 200,
			"code=200,component=apiserver,group=g,resource=things,scope=resource,subresource=status,verb=PUT,version=v1"},
		{"apply", "PATCH", "/apis/g/v1/things/a", "application/apply-patch+yaml", "api", 200,
			"code=200,component=apiserver,group=g,resource=things,scope=resource,verb=APPLY,version=v1"},
		{"merge patch", "PATCH", "/apis/g/v1/things/a", "application/merge-patch+json", "api", 200,
			"code=200,component=apiserver,group=g,resource=things,scope=resource,verb=PATCH,version=v1"},
		{"deletecollection dry run", "DELETE", "/apis/g/v1/things?dryRun=All", "", "api", 200,
			"code=200,component=apiserver,dry_run=All,group=g,resource=things,scope=cluster,verb=DELETECOLLECTION,version=v1"},
		{"invalid dry run", "DELETE", "/apis/g/v1/things/a?dryRun=Some", "", "api", 400,
			"code=400,component=apiserver,dry_run=invalid,group=g,resource=things,scope=resource,verb=DELETE,version=v1"},
		{"unrouted resource", "GET", "/apis/g/v1/made-up-1", "", "", 404,
			"code=404,component=apiserver,scope=cluster,verb=LIST"},
		{"unknown method", "BREW", "/apis/g/v1/things", "", "", 405,
			"code=405,component=apiserver,scope=cluster,verb=other"},
		{"non-resource", "GET", "/healthz", "", "/healthz", 200,
			"code=200,subresource=/healthz,verb=GET"},
		{"unrouted non-resource", "GET", "/made/up", "", "", 404,
			"code=404,verb=GET"},
		{"unknown non-resource method", "BREW", "/healthz", "", "/healthz", 405,
			"code=405,subresource=/healthz,verb=other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New()
			h := filters.WithRequestInfo(filters.WithMetrics(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch tc.routed {
				case "":
				case "api":
					metrics.MarkRouted(r.Context(), "")
				default:
					metrics.MarkRouted(r.Context(), tc.routed)
				}
				w.WriteHeader(tc.code)
			}), m, func(*request.Info) bool { return false }), request.DefaultResolver)
			r := httptest.NewRequest(tc.method, tc.url, nil)
			if tc.contentType != "" {
				r.Header.Set("Content-Type", tc.contentType)
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			if got := requestSeries(t, m); len(got) != 1 || got[0] != tc.want {
				t.Errorf("series %q, want [%s]", got, tc.want)
			}
		})
	}
}

// TestMetricsLongRunning: a long-running request is active from when its
// response starts until it ends, and is not in flight meanwhile; a panic
// is still counted, as the 500 it becomes.
func TestMetricsLongRunning(t *testing.T) {
	m := metrics.New()
	var during, inflight float64
	h := filters.WithRequestInfo(filters.WithMetrics(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		metrics.MarkRouted(r.Context(), "")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		during = gaugeSum(t, m, "apiserver_longrunning_requests")
		inflight = gaugeSum(t, m, "apiserver_current_inflight_requests")
	}), m, (*request.Info).IsLongRunning), request.DefaultResolver)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/apis/g/v1/things?watch=1", nil))
	if during != 1 || inflight != 0 {
		t.Errorf("during the watch: %v long-running, %v in flight; want 1 and 0", during, inflight)
	}
	if after := gaugeSum(t, m, "apiserver_longrunning_requests"); after != 0 {
		t.Errorf("after the watch: %v long-running, want 0", after)
	}

	panicking := filters.WithRequestInfo(filters.WithMetrics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom")
	}), m, (*request.Info).IsLongRunning), request.DefaultResolver)
	func() {
		defer func() { _ = recover() }()
		panicking.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/apis/g/v1/things/a", nil))
	}()
	found := false
	for _, s := range requestSeries(t, m) {
		found = found || strings.HasPrefix(s, "code=500,")
	}
	if !found {
		t.Errorf("the panicking request is not counted as a 500: %q", requestSeries(t, m))
	}
	if got := gaugeSum(t, m, "apiserver_current_inflight_requests"); got != 0 {
		t.Errorf("in flight after a panic: %v, want 0", got)
	}
}

func gaugeSum(t *testing.T, m *metrics.Registry, name string) float64 {
	t.Helper()
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() == name {
			for _, s := range f.GetMetric() {
				sum += s.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// BenchmarkMetrics is what the metrics filter adds to a routed GET whose
// handler does nothing.
func BenchmarkMetrics(b *testing.B) {
	noop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		metrics.MarkRouted(r.Context(), "")
		w.WriteHeader(http.StatusOK)
	})
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{
		{"without", filters.WithRequestInfo(noop, request.DefaultResolver)},
		{"with", filters.WithRequestInfo(filters.WithMetrics(noop, metrics.New(), (*request.Info).IsLongRunning), request.DefaultResolver)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/apis/example.com/v1/namespaces/ns/widgets/w1", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				tc.h.ServeHTTP(w, r)
			}
		})
	}
}
