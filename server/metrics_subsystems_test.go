package server_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/server"
)

// denyBad is a named validating admission plugin that refuses objects
// named "bad".
type denyBad struct{ admission.Handler }

func (denyBad) Name() string { return "DenyBad" }

func (denyBad) Validate(_ context.Context, a *admission.Attributes) error {
	if a.Name == "bad" {
		return errors.New("bad is bad")
	}
	return nil
}

type discardSink struct{}

func (discardSink) Log(*audit.Event) {}

// values returns a family's series as label string -> value: a counter's
// or gauge's value, a histogram's sample count.
func values(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fams[name].GetMetric() {
		v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		out[series(m)] += v
	}
	return out
}

func bucketsOf(fams map[string]*dto.MetricFamily, name string) []float64 {
	ms := fams[name].GetMetric()
	if len(ms) == 0 {
		return nil
	}
	var bounds []float64
	for _, b := range ms[0].GetHistogram().GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	return bounds
}

// scrapeAfterTraffic serves known traffic through a server with an
// authenticator, an authorizer, an audit sink, an admission plugin and
// priority and fairness, and returns its /metrics.
func scrapeAfterTraffic(t *testing.T) map[string]*dto.MetricFamily {
	s := newServer(t, "test", server.NewEmptyDelegate(), func(c *server.Config) {
		c.Authenticator = authn.Func(func(r *http.Request) (*authn.Response, bool, error) {
			switch r.Header.Get("X-Test") {
			case "none":
				return nil, false, nil
			case "error":
				return nil, false, errors.New("token review failed")
			}
			return &authn.Response{User: authn.User{Name: r.Header.Get("X-Test-User")}}, true, nil
		})
		c.Authorizer = authz.Func(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
			if a.User.Name == "mallory" {
				return authz.DecisionDeny, "no", nil
			}
			return authz.DecisionAllow, "", nil
		})
		c.Audit = discardSink{}
		c.Admission = admission.Chain{denyBad{admission.Handler{Operations: []admission.Operation{admission.Create}}}}
	})
	if err := s.InstallAPIGroup(widgetGroup(t, "test.example.com")); err != nil {
		t.Fatal(err)
	}
	const ns = "/apis/test.example.com/v1/namespaces/ns1/widgets"
	do := func(method, path, body, user, test string, want int) {
		t.Helper()
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		r.Header.Set("X-Test-User", user)
		r.Header.Set("X-Test", test)
		rec := httptest.NewRecorder()
		s.Handler.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Fatalf("%s %s as %q: %d, want %d: %s", method, path, user, rec.Code, want, rec.Body)
		}
	}
	do("POST", ns, `{"metadata":{"name":"a"}}`, "alice@example.com", "", 201)
	do("POST", ns, `{"metadata":{"name":"b"}}`, "alice@example.com", "", 201)
	do("POST", ns, `{"metadata":{"name":"bad"}}`, "alice@example.com", "", 403)
	do("GET", ns+"/a", "", "bob", "", 200)
	do("GET", ns+"/a", "", "mallory", "", 403)
	do("GET", ns+"/a", "", "", "none", 401)
	do("GET", ns+"/a", "", "", "error", 401)
	// A watch from "0" gets the two widgets, then ends at its timeout.
	do("GET", ns+"?watch=true&resourceVersion=0&timeoutSeconds=1", "", "bob", "", 200)
	// A made-up resource adds no series to any of the metrics below.
	do("GET", "/apis/test.example.com/v1/nosuch", "", "bob", "", 404)

	r := httptest.NewRequest("GET", "/metrics", nil)
	r.Header.Set("X-Test-User", "prometheus")
	return scrapeAs(t, s.Handler, r)
}

// TestMetricsSubsystems: after known traffic, /metrics holds
// kube-apiserver's authentication, authorization, audit, flow-control,
// admission, watch and object-count series, with its labels and buckets,
// each fed from where it happens.
func TestMetricsSubsystems(t *testing.T) {
	fams := scrapeAfterTraffic(t)
	check := func(name, labels string, want float64) {
		t.Helper()
		if got := values(fams, name)[labels]; got != want {
			t.Errorf("%s{%s} = %v, want %v (have %v)", name, labels, got, want, values(fams, name))
		}
	}
	// The scrape itself authenticates (as "other") before it is served.
	check("authentication_attempts", "result=success", 8)
	check("authentication_attempts", "result=failure", 1)
	check("authentication_attempts", "result=error", 1)
	check("authentication_duration_seconds", "result=error", 1)
	check("authenticated_user_requests", "username=email_id", 3)
	check("authenticated_user_requests", "username=other", 5)
	check("authorization_attempts_total", "result=allowed", 7)
	check("authorization_attempts_total", "result=denied", 1)
	check("authorization_duration_seconds", "result=denied", 1)

	// Every request that got past authentication was audited at Metadata:
	// RequestReceived and ResponseComplete (a watch: ResponseStarted too).
	check("apiserver_audit_level_total", "level=Metadata", 8)
	if got := values(fams, "apiserver_audit_event_total")[""]; got < 15 {
		t.Errorf("apiserver_audit_event_total = %v, want at least 15", got)
	}

	check("apiserver_admission_controller_admission_duration_seconds", "name=DenyBad,operation=CREATE,rejected=true,type=validate", 1)
	check("apiserver_admission_controller_admission_duration_seconds", "name=DenyBad,operation=CREATE,rejected=false,type=validate", 2)
	check("apiserver_admission_step_admission_duration_seconds", "operation=CREATE,rejected=true,type=validate", 1)
	check("apiserver_admission_step_admission_duration_seconds", "operation=CREATE,rejected=false,type=admit", 3)

	check("apiserver_watch_events_total", "group=test.example.com,kind=Widget,version=v1", 2)
	check("apiserver_watch_events_sizes", "group=test.example.com,kind=Widget,version=v1", 2)

	check("apiserver_resource_objects", "group=test.example.com,resource=widgets", 2)
	check("apiserver_resource_objects", "group=test.example.com,resource=gadgets", 0)
	check("apiserver_storage_objects", "resource=widgets.test.example.com", 2)

	// Flow control: alice, bob and mallory are global-default; the scrape
	// (not yet finished) is dispatched too.
	check("apiserver_flowcontrol_dispatched_requests_total", "flow_schema=global-default,priority_level=global-default", 8)
	check("apiserver_flowcontrol_request_wait_duration_seconds", "execute=true,flow_schema=global-default,priority_level=global-default", 8)
	check("apiserver_flowcontrol_current_executing_requests", "flow_schema=global-default,priority_level=global-default", 1)
	check("apiserver_flowcontrol_current_executing_seats", "flow_schema=global-default,priority_level=global-default", 1)
	check("apiserver_flowcontrol_current_inqueue_requests", "flow_schema=global-default,priority_level=global-default", 0)
	// The watch gave its seat back once its initial events were sent.
	check("apiserver_flowcontrol_request_execution_seconds", "flow_schema=global-default,priority_level=global-default,type=watch", 1)
	check("apiserver_flowcontrol_nominal_limit_seats", "priority_level=exempt", 0)
	if got := values(fams, "apiserver_flowcontrol_nominal_limit_seats")["priority_level=global-default"]; got <= 0 {
		t.Errorf("apiserver_flowcontrol_nominal_limit_seats{global-default} = %v, want some seats", got)
	}

	for name, want := range map[string][]float64{
		"apiserver_flowcontrol_request_wait_duration_seconds":       {0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, math.Inf(1)},
		"apiserver_admission_controller_admission_duration_seconds": {0.005, 0.025, 0.1, 0.5, 1, 2.5, math.Inf(1)},
		"apiserver_watch_events_sizes":                              {1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, math.Inf(1)},
		"authentication_duration_seconds":                           {0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384, math.Inf(1)},
	} {
		if got := bucketsOf(fams, name); !equalFloats(got, want) {
			t.Errorf("%s buckets %v, want kube-apiserver's %v", name, got, want)
		}
	}
	for name := range fams {
		for _, m := range fams[name].GetMetric() {
			if strings.Contains(series(m), "nosuch") {
				t.Errorf("%s has a series of the made-up resource: %s", name, series(m))
			}
		}
	}
}

// scrapeAs reads /metrics with r, parsed as a scraper does.
func scrapeAs(t *testing.T, h http.Handler, r *http.Request) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	return parseExposition(t, rec.Body.String())
}

func parseExposition(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// TestMetricsSLIs: /metrics/slis serves kube-apiserver's health check
// indicators, one series per check and endpoint, kept apart from /metrics.
func TestMetricsSLIs(t *testing.T) {
	s := newServer(t, "test", server.NewEmptyDelegate(), func(c *server.Config) {
		c.ReadyzChecks = append(c.ReadyzChecks, server.HealthCheck{Name: "broken", Check: func(*http.Request) error { return errors.New("down") }})
	})
	for _, p := range []struct {
		path string
		code int
	}{{"/healthz", 200}, {"/healthz", 200}, {"/readyz", 500}} {
		if got := send(t, s.Handler, "GET", p.path, "", ""); got != p.code {
			t.Fatalf("GET %s: %d, want %d", p.path, got, p.code)
		}
	}
	fams := scrapeAs(t, s.Handler, httptest.NewRequest("GET", "/metrics/slis", nil))
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"kubernetes_healthcheck", "name=ping,type=healthz", 1},
		{"kubernetes_healthcheck", "name=ping,type=readyz", 1},
		{"kubernetes_healthcheck", "name=broken,type=readyz", 0},
		{"kubernetes_healthchecks_total", "name=ping,status=success,type=healthz", 2},
		{"kubernetes_healthchecks_total", "name=broken,status=error,type=readyz", 1},
	} {
		if got, ok := values(fams, c.name)[c.labels]; !ok || got != c.want {
			t.Errorf("%s{%s} = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, ok := fams["kubernetes_healthcheck"]; !ok {
		t.Fatal("/metrics/slis lacks kubernetes_healthcheck")
	}
	if _, ok := scrape(t, s.Handler)["kubernetes_healthcheck"]; ok {
		t.Error("/metrics serves the SLIs too; kube-apiserver serves them at /metrics/slis only")
	}
}
