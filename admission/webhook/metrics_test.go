package webhook

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
)

// TestWebhookMetrics: every call is timed and counted under kube's
// apiserver_admission_webhook_* names, a denial is a rejection with its
// code, a webhook that is down is a calling-error rejection under Fail and
// a fail-open under Ignore.
func TestWebhookMetrics(t *testing.T) {
	deny := newWebhookServer(t, func(req *AdmissionRequest, resp *AdmissionResponse) {
		resp.Allowed = false
		resp.Result = &meta.Status{Message: "no", Code: 403}
	})
	allow := newWebhookServer(t, func(*AdmissionRequest, *AdmissionResponse) {})
	down := httptest.NewUnstartedServer(http.NotFoundHandler())
	down.StartTLS()
	downURL, downCA := down.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: down.Certificate().Raw})
	down.Close()
	downHook := func(fp registration.FailurePolicyType) func(*registration.ValidatingWebhook) {
		return func(h *registration.ValidatingWebhook) {
			h.ClientConfig = registration.WebhookClientConfig{URL: ptr(downURL + "/down"), CABundle: downCA}
			h.FailurePolicy = &fp
		}
	}
	reg := metrics.New()
	ctx := metrics.WithRoute(context.Background(), &metrics.Route{Registry: reg})
	for _, configs := range [][]*registration.ValidatingWebhookConfiguration{
		{validatingOf(allow, "allow.example.com", nil)},
		{validatingOf(deny, "deny.example.com", nil)},
		{validatingOf(deny, "fail.example.com", downHook(registration.Fail))},
		{validatingOf(deny, "ignore.example.com", downHook(registration.Ignore))},
	} {
		_, v := newPlugins(t, nil, configs)
		_ = v.Validate(ctx, attrs(admission.Create, nil))
	}
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			switch f.GetName() {
			case "apiserver_admission_webhook_admission_duration_seconds":
				got["duration/"+l["name"]+"/"+l["type"]+"/"+l["operation"]+"/"+l["rejected"]] = float64(m.GetHistogram().GetSampleCount())
			case "apiserver_admission_webhook_rejection_count":
				got["rejection/"+l["name"]+"/"+l["error_type"]+"/"+l["rejection_code"]] = m.GetCounter().GetValue()
			case "apiserver_admission_webhook_fail_open_count":
				got["failopen/"+l["name"]+"/"+l["type"]] = m.GetCounter().GetValue()
			}
		}
	}
	for k, v := range map[string]float64{
		"duration/allow.example.com/validate/CREATE/false":   1,
		"duration/deny.example.com/validate/CREATE/true":     1,
		"duration/fail.example.com/validate/CREATE/true":     1,
		"rejection/deny.example.com/no_error/403":            1,
		"rejection/fail.example.com/calling_webhook_error/0": 1,
		"failopen/ignore.example.com/validate":               1,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got["rejection/ignore.example.com/calling_webhook_error/0"]; ok {
		t.Error("a webhook that failed open was counted as a rejection")
	}
}
