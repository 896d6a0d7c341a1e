package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Step types of the admission metrics' type label, kube-apiserver's.
const (
	AdmissionAdmit    = "admit"
	AdmissionValidate = "validate"
)

// Error types of apiserver_admission_webhook_rejection_count,
// kube-apiserver's.
const (
	WebhookCallingError  = "calling_webhook_error"
	WebhookInternalError = "apiserver_internal_error"
	WebhookNoError       = "no_error"
)

var (
	// AdmissionBuckets are the step and controller histograms', 5ms to 2.5s.
	AdmissionBuckets = []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5}
	// WebhookBuckets are apiserver_admission_webhook_admission_duration_seconds's,
	// up to 25s: webhooks time out after 10s by default, 30s at most.
	WebhookBuckets = []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25}
)

type admissionMetrics struct {
	step, controller, webhook *prometheus.HistogramVec
	webhookRequests           *prometheus.CounterVec
	webhookRejections         *prometheus.CounterVec
	webhookFailOpen           *prometheus.CounterVec
}

func newAdmissionMetrics(reg prometheus.Registerer) admissionMetrics {
	a := admissionMetrics{
		step: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_admission_step_admission_duration_seconds",
			Help:    "Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).",
			Buckets: AdmissionBuckets,
		}, []string{"type", "operation", "rejected"}),
		controller: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_admission_controller_admission_duration_seconds",
			Help:    "Admission controller latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
			Buckets: AdmissionBuckets,
		}, []string{"name", "type", "operation", "rejected"}),
		webhook: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_admission_webhook_admission_duration_seconds",
			Help:    "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
			Buckets: WebhookBuckets,
		}, []string{"name", "type", "operation", "rejected"}),
		webhookRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_admission_webhook_request_total",
			Help: "Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
		}, []string{"name", "type", "operation", "code", "rejected"}),
		webhookRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_admission_webhook_rejection_count",
			Help: "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
		}, []string{"name", "type", "operation", "error_type", "rejection_code"}),
		webhookFailOpen: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_admission_webhook_fail_open_count",
			Help: "Admission webhook fail open count, identified by name and broken out for each admission type (validating or mutating).",
		}, []string{"name", "type"}),
	}
	reg.MustRegister(a.step, a.controller, a.webhook, a.webhookRequests, a.webhookRejections, a.webhookFailOpen)
	return a
}

// ObserveAdmissionStep records one phase of admission (AdmissionAdmit:
// every mutating plugin; AdmissionValidate: every validating one) of a
// write of operation (CREATE, UPDATE, DELETE, CONNECT).
func (m *Registry) ObserveAdmissionStep(stepType, operation string, rejected bool, elapsed time.Duration) {
	if m == nil {
		return
	}
	m.adm.step.WithLabelValues(stepType, operation, strconv.FormatBool(rejected)).Observe(elapsed.Seconds())
}

// ObserveAdmissionController records one admission plugin's run; name is
// the plugin's, from the server's own set (not a client's choice).
func (m *Registry) ObserveAdmissionController(name, stepType, operation string, rejected bool, elapsed time.Duration) {
	if m == nil {
		return
	}
	m.adm.controller.WithLabelValues(name, stepType, operation, strconv.FormatBool(rejected)).Observe(elapsed.Seconds())
}

// ObserveAdmissionWebhook records one call of an admission webhook (name:
// the webhook's name in its configuration; stepType AdmissionAdmit for a
// mutating webhook, AdmissionValidate for a validating one) and the HTTP
// code it answered with (0 when none), for
// apiserver_admission_webhook_admission_duration_seconds and
// apiserver_admission_webhook_request_total.
func (m *Registry) ObserveAdmissionWebhook(name, stepType, operation string, rejected bool, code int, elapsed time.Duration) {
	if m == nil {
		return
	}
	r := strconv.FormatBool(rejected)
	m.adm.webhookRequests.WithLabelValues(name, stepType, operation, strconv.Itoa(min(code, 600)), r).Inc()
	m.adm.webhook.WithLabelValues(name, stepType, operation, r).Observe(elapsed.Seconds())
}

// ObserveAdmissionWebhookRejection counts a write a webhook refused:
// errorType is WebhookNoError when the webhook said no (code is then its
// status code, or 0), WebhookCallingError when it could not be called,
// WebhookInternalError when the server failed around it.
func (m *Registry) ObserveAdmissionWebhookRejection(name, stepType, operation, errorType string, code int) {
	if m == nil {
		return
	}
	m.adm.webhookRejections.WithLabelValues(name, stepType, operation, errorType, strconv.Itoa(min(code, 600))).Inc()
}

// ObserveAdmissionWebhookFailOpen counts a webhook call that failed and was
// ignored (failurePolicy: Ignore).
func (m *Registry) ObserveAdmissionWebhookFailOpen(name, stepType string) {
	if m == nil {
		return
	}
	m.adm.webhookFailOpen.WithLabelValues(name, stepType).Inc()
}
