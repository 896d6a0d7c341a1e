package e2e

import (
	"strings"
	"testing"

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
// and an ordinary user gets kube-apiserver's 403.
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
	bob := w.NewUser("bob")
	if _, errOut, ok := bob.Kubectl("get", "--raw", "/metrics"); ok || !strings.Contains(errOut, `Error from server (Forbidden): forbidden: User "bob" cannot get path "/metrics"`) {
		t.Errorf("bob reading /metrics: succeeded %v, %s", ok, errOut)
	}
}
