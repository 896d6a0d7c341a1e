package e2e

import (
	"fmt"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// listsOfFlunders sums apiserver_request_total over the successful
// namespaced LISTs of flunders in the exposition text, whatever the version.
func listsOfFlunders(t *testing.T, exposition string) float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(exposition))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	var sum float64
	for _, m := range fams["apiserver_request_total"].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["group"] == "wardle.example.com" && l["resource"] == "flunders" && l["verb"] == "LIST" &&
			l["scope"] == "namespace" && l["code"] == "200" && l["component"] == "apiserver" {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// TestMetrics: kubectl reads /metrics from a real wardle as cluster-admin
// and as a member of system:monitoring, its counts follow kubectl's LISTs,
// system:monitoring reads /metrics/slis too, and an ordinary user gets
// kube-apiserver's 403 on both.
func TestMetrics(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")
	before := listsOfFlunders(t, w.Kubectl("get", "--raw", "/metrics"))
	for range 2 {
		w.Kubectl("get", "flunders", "-n", "default")
	}
	if got := listsOfFlunders(t, w.Kubectl("get", "--raw", "/metrics")) - before; got != 2 {
		t.Errorf("apiserver_request_total counted %v LISTs of flunders, want the 2 kubectl made", got)
	}

	prom := w.NewUser("prometheus", "system:monitoring")
	if out, errOut, ok := prom.Kubectl("get", "--raw", "/metrics"); !ok || !strings.Contains(out, "# TYPE apiserver_request_duration_seconds histogram") {
		t.Errorf("system:monitoring reading /metrics: %v %s", ok, errOut)
	}
	// The readiness wait ran /readyz: its checks are in the SLIs.
	if out, errOut, ok := prom.Kubectl("get", "--raw", "/metrics/slis"); !ok || !strings.Contains(out, `kubernetes_healthcheck{name="ping",type="readyz"} 1`) {
		t.Errorf("system:monitoring reading /metrics/slis: %v %s %s", ok, out, errOut)
	}
	bob := w.NewUser("bob")
	if _, errOut, ok := bob.Kubectl("get", "--raw", "/metrics"); ok || !strings.Contains(errOut, `Error from server (Forbidden): forbidden: User "bob" cannot get path "/metrics"`) {
		t.Errorf("bob reading /metrics: succeeded %v, %s", ok, errOut)
	}
	if _, errOut, ok := bob.Kubectl("get", "--raw", "/metrics/slis"); ok || !strings.Contains(errOut, `cannot get path "/metrics/slis"`) {
		t.Errorf("bob reading /metrics/slis: succeeded %v, %s", ok, errOut)
	}
}

// sample is the value of one series of an exposition: the counter, gauge
// or histogram sample count whose labels include want; the sum over all
// such series.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	for _, m := range fams[name].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		match := true
		for k, v := range want {
			if l[k] != v {
				match = false
			}
		}
		if match {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// TestMetricsSubsystems: a real wardle on its embedded etcd, after kubectl
// creates, lists and watches flunders, serves kube-apiserver's storage,
// watch cache, object-count, watch, admission, flow-control and
// authentication metrics, parsed as Prometheus parses them.
func TestMetricsSubsystems(t *testing.T) {
	w := StartWardle(t)
	w.KubectlStdin(fmt.Sprintf(aggFlunder, "metrics-a", "b"), "create", "-n", "default", "-f", "-")
	w.Kubectl("get", "flunders", "-n", "default")
	// A watch from "0" gets the flunder, then ends at its timeout.
	w.Kubectl("get", "--raw", "/apis/wardle.example.com/v1beta1/namespaces/default/flunders?watch=true&resourceVersion=0&timeoutSeconds=1")

	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(w.Kubectl("get", "--raw", "/metrics")))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	flunders := map[string]string{"group": "wardle.example.com", "resource": "flunders"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"etcd_requests_total", map[string]string{"group": "wardle.example.com", "resource": "flunders", "operation": "create"}, 1},
		{"etcd_request_duration_seconds", map[string]string{"group": "wardle.example.com", "resource": "flunders", "operation": "create"}, 1},
		{"apiserver_resource_objects", flunders, 1},
		{"apiserver_storage_objects", map[string]string{"resource": "flunders.wardle.example.com"}, 1},
		{"apiserver_watch_events_total", map[string]string{"group": "wardle.example.com", "version": "v1beta1", "kind": "Flunder"}, 1},
		{"apiserver_admission_step_admission_duration_seconds", map[string]string{"type": "validate", "operation": "CREATE", "rejected": "false"}, 1},
		{"apiserver_flowcontrol_dispatched_requests_total", map[string]string{"priority_level": "exempt"}, 3},
		{"apiserver_flowcontrol_nominal_limit_seats", map[string]string{"priority_level": "global-default"}, 1},
		{"apiserver_watch_cache_initializations_total", flunders, 1},
		{"apiserver_watch_cache_events_received_total", flunders, 1},
		{"apiserver_cache_list_total", flunders, 1},
		{"authentication_attempts", map[string]string{"result": "success"}, 4},
		{"authorization_attempts_total", map[string]string{"result": "allowed"}, 4},
	} {
		if got := sample(fams, c.name, c.labels); got < c.min {
			t.Errorf("%s%v = %v, want at least %v", c.name, c.labels, got, c.min)
		}
	}
	if got := sample(fams, "apiserver_resource_objects", flunders); got != 1 {
		t.Errorf("apiserver_resource_objects%v = %v, want the 1 flunder created", flunders, got)
	}

	// A system:monitoring member is let in by RBAC (admin by the
	// system:masters short cut, which is not counted): its own scrape
	// counts RBAC's allow.
	prom := w.NewUser("prometheus", "system:monitoring")
	out, errOut, ok := prom.Kubectl("get", "--raw", "/metrics")
	if !ok {
		t.Fatalf("system:monitoring reading /metrics: %s", errOut)
	}
	if fams, err = p.TextToMetricFamilies(strings.NewReader(out)); err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	rbacAllowed := map[string]string{"type": "RBAC", "name": "rbac", "decision": "allowed"}
	if got := sample(fams, "apiserver_authorization_decisions_total", rbacAllowed); got < 1 {
		t.Errorf("apiserver_authorization_decisions_total%v = %v, want at least 1", rbacAllowed, got)
	}
}
