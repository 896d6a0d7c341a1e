package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Health check endpoints, the type label of the SLI metrics.
const (
	Healthz = "healthz"
	Livez   = "livez"
	Readyz  = "readyz"
)

// slis are kube-apiserver's service-level indicators, served apart from
// the other metrics at /metrics/slis: the results of the health checks.
type slis struct {
	reg     *prometheus.Registry
	current *prometheus.GaugeVec
	total   *prometheus.CounterVec
}

func newSLIs() slis {
	s := slis{
		reg: prometheus.NewRegistry(),
		current: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubernetes_healthcheck",
			Help: "This metric records the result of a single healthcheck.",
		}, []string{"name", "type"}),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubernetes_healthchecks_total",
			Help: "This metric records the results of all healthcheck.",
		}, []string{"name", "type", "status"}),
	}
	s.reg.MustRegister(s.current, s.total)
	return s
}

// ObserveHealthCheck records one run of the health check name (one of
// the server's own) for endpoint (Healthz, Livez, Readyz): 1 or 0 in
// kubernetes_healthcheck, and a count by status ("success", "error").
func (m *Registry) ObserveHealthCheck(name, endpoint string, ok bool) {
	if m == nil {
		return
	}
	status, value := "success", 1.0
	if !ok {
		status, value = "error", 0
	}
	m.slis.current.WithLabelValues(name, endpoint).Set(value)
	m.slis.total.WithLabelValues(name, endpoint, status).Inc()
}

// SLIHandler serves /metrics/slis: the health checks' results, as
// kube-apiserver serves them there. Authorization decides who reads it
// (get on the non-resource URL /metrics/slis; system:monitoring may).
func (m *Registry) SLIHandler() http.Handler {
	return promhttp.HandlerFor(m.slis.reg, promhttp.HandlerOpts{})
}
