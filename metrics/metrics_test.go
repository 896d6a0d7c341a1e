package metrics_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/metrics"
)

// TestNilRegistry: code that runs outside a server with metrics (From
// gives nil) calls the recorders without checking.
func TestNilRegistry(t *testing.T) {
	var m *metrics.Registry
	m.ObserveAuthentication(metrics.AuthnSuccess, "alice", time.Millisecond)
	m.ObserveAuthorization(metrics.AuthzAllowed, time.Millisecond)
	m.ObserveAuthorizationDecision("RBAC", "rbac", metrics.AuthzAllowed)
	m.ObserveAuditEvent()
	m.ObserveAuditLevel("Metadata")
	m.ObserveAuditRejection()
	m.ObserveAdmissionStep(metrics.AdmissionAdmit, "CREATE", false, time.Millisecond)
	m.ObserveAdmissionController("p", metrics.AdmissionAdmit, "CREATE", false, time.Millisecond)
	m.ObserveAdmissionWebhook("w", metrics.AdmissionValidate, "CREATE", true, 403, time.Millisecond)
	m.ObserveAdmissionWebhookRejection("w", metrics.AdmissionValidate, "CREATE", metrics.WebhookNoError, 403)
	m.ObserveAdmissionWebhookFailOpen("w", metrics.AdmissionValidate)
	r := m.FlowControlArrived("pl", "fs", false)
	r.Dispatched(1)
	r.Finished()
	r.Rejected(metrics.RejectQueueFull)
	m.WatchEventsOf("g", "v1", "K").Sent(10)
	s := m.StorageRequestsOf("g", "r")
	s.Observe(metrics.OpGet, time.Now(), nil)
	s.ObserveList(3)
	m.RegisterObjectCounts(func() []metrics.ObjectCount { return nil })
	if err := m.RegisterSeatLimits(nil); err != nil {
		t.Error(err)
	}
	if err := m.RegisterAuditErrors("log", func() int64 { return 0 }); err != nil {
		t.Error(err)
	}
}

func TestCompressUsername(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"admin", "admin"},
		{"kubelet", "kubelet"},
		{"system:serviceaccount:kube-system:default", "system:serviceaccount:kube-system:default"},
		{"alice@example.com", "email_id"},
		{"alice", "other"},
		{"system:serviceaccount:ns:builder", "other"},
		{"", "other"},
	} {
		if got := metrics.CompressUsername(tc.in); got != tc.want {
			t.Errorf("CompressUsername(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestNames: a registry serves kube-apiserver's metric families, whether
// or not they have a series yet.
func TestNames(t *testing.T) {
	names := metrics.New().Names()
	for _, want := range []string{
		"apiserver_request_total", "apiserver_request_duration_seconds", "apiserver_response_sizes",
		"apiserver_current_inflight_requests", "apiserver_longrunning_requests",
		"apiserver_watch_events_total", "apiserver_watch_events_sizes",
		"apiserver_storage_objects", "apiserver_resource_objects",
		"etcd_request_duration_seconds", "etcd_requests_total", "etcd_request_errors_total",
		"apiserver_storage_list_total", "apiserver_storage_list_returned_objects_total",
		"apiserver_flowcontrol_dispatched_requests_total", "apiserver_flowcontrol_rejected_requests_total",
		"apiserver_flowcontrol_current_inqueue_requests", "apiserver_flowcontrol_request_wait_duration_seconds",
		"apiserver_flowcontrol_current_executing_requests", "apiserver_flowcontrol_current_executing_seats",
		"apiserver_flowcontrol_request_execution_seconds",
		"apiserver_admission_step_admission_duration_seconds", "apiserver_admission_controller_admission_duration_seconds",
		"apiserver_admission_webhook_admission_duration_seconds", "apiserver_admission_webhook_rejection_count",
		"apiserver_audit_event_total", "apiserver_audit_level_total", "apiserver_audit_requests_rejected_total",
		"authentication_attempts", "authenticated_user_requests", "authentication_duration_seconds",
		"authorization_attempts_total", "authorization_duration_seconds", "apiserver_authorization_decisions_total",
		"go_goroutines", "process_cpu_seconds_total",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("Names() lacks %s", want)
		}
	}
}

type seatLimits []metrics.SeatLimits

func (s seatLimits) SeatLimits() []metrics.SeatLimits { return s }

// TestDashboard: every query of the Grafana dashboard reads metrics apikit
// serves (a histogram through its _bucket series), so that it shows data
// and not "No data" against an apikit server.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("../docs/dashboards/apikit.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string
		Panels []struct {
			Title   string
			Type    string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	m := metrics.New()
	if err := m.RegisterSeatLimits(seatLimits{}); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, n := range m.Names() {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			served[n+suffix] = true
		}
	}
	queries := 0
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries++
			refs := metricNames(tg.Expr)
			if len(refs) == 0 {
				t.Errorf("panel %q: no metric found in %q", p.Title, tg.Expr)
			}
			for _, r := range refs {
				if !served[r] {
					t.Errorf("panel %q reads %s, which apikit does not serve", p.Title, r)
				}
			}
		}
	}
	if queries < 20 {
		t.Errorf("the dashboard has %d queries; it should cover requests, flow control, storage, admission and auth", queries)
	}
}

var (
	promSelector = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]|"[^"]*"`)
	promGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true}
)

// metricNames are the metric names a PromQL expression reads: its
// identifiers, once label matchers, ranges, strings and groupings are
// taken out, that are not functions (followed by "(") or keywords.
func metricNames(expr string) []string {
	expr = promSelector.ReplaceAllString(expr, " ")
	expr = promGrouping.ReplaceAllString(expr, " ")
	var names []string
	for _, tok := range promIdent.FindAllString(expr, -1) {
		if strings.HasSuffix(tok, "(") || promKeywords[strings.TrimSpace(tok)] {
			continue
		}
		names = append(names, strings.TrimSpace(tok))
	}
	return names
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`go_goroutines`, []string{"go_goroutines"}},
		{`histogram_quantile(0.99, sum by (le, verb) (rate(apiserver_request_duration_seconds_bucket{verb!~"WATCH|CONNECT"}[5m])))`, []string{"apiserver_request_duration_seconds_bucket"}},
		{`sum(rate(a_total{code=~"5.."}[5m])) / sum(rate(b_total[5m]))`, []string{"a_total", "b_total"}},
		{`max by (priority_level) (x_seats)`, []string{"x_seats"}},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// BenchmarkGetRecorders is what the metrics added beside the request
// filter's cost a GET: the registry found in the context by
// authentication, authorization and flow control, their observations,
// the flow-control request followed from arrival to finish (with the
// closure that finishes it), and one storage read.
func BenchmarkGetRecorders(b *testing.B) {
	m := metrics.New()
	ctx := metrics.WithRoute(context.Background(), &metrics.Route{Registry: m})
	storage := m.StorageRequestsOf("example.com", "widgets")
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		metrics.From(ctx).ObserveAuthentication(metrics.AuthnSuccess, "alice", time.Since(start))
		metrics.From(ctx).ObserveAuthorization(metrics.AuthzAllowed, time.Since(start))
		fc := metrics.From(ctx)
		r := fc.FlowControlArrived("global-default", "global-default", false)
		r.Dispatched(1)
		finish := func() { r.Finished() }
		storage.Observe(metrics.OpGet, time.Now(), nil)
		finish()
	}
}
