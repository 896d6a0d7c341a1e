package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

type auditMetrics struct {
	events   prometheus.Counter
	levels   *prometheus.CounterVec
	rejected prometheus.Counter
}

func newAuditMetrics(reg prometheus.Registerer) auditMetrics {
	a := auditMetrics{
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apiserver_audit_event_total",
			Help: "Counter of audit events generated and sent to the audit backend.",
		}),
		levels: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_audit_level_total",
			Help: "Counter of policy levels for audit events (1 per request).",
		}, []string{"level"}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apiserver_audit_requests_rejected_total",
			Help: "Counter of apiserver requests rejected due to an error in audit logging backend.",
		}),
	}
	reg.MustRegister(a.events, a.levels, a.rejected)
	return a
}

// ObserveAuditEvent counts an audit event handed to the audit sink.
func (m *Registry) ObserveAuditEvent() {
	if m == nil {
		return
	}
	m.audit.events.Inc()
}

// ObserveAuditLevel counts a request audited at level (None, Metadata,
// Request, RequestResponse: the policy's bounded set).
func (m *Registry) ObserveAuditLevel(level string) {
	if m == nil {
		return
	}
	m.audit.levels.WithLabelValues(level).Inc()
}

// ObserveAuditRejection counts a request refused because its audit event
// could not be stored (--audit-log-mode=blocking-strict).
func (m *Registry) ObserveAuditRejection() {
	if m == nil {
		return
	}
	m.audit.rejected.Inc()
}

var auditErrorsDesc = prometheus.NewDesc("apiserver_audit_error_total",
	"Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.",
	[]string{"plugin"}, nil)

// auditErrorsCollector reads a backend's count of lost events when
// scraped; the backend counts them anyway (audit.BatchSink.Dropped).
type auditErrorsCollector struct {
	plugin string
	count  func() int64
}

func (c auditErrorsCollector) Describe(chan<- *prometheus.Desc) {}

func (c auditErrorsCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(auditErrorsDesc, prometheus.CounterValue, float64(c.count()), c.plugin)
}

// RegisterAuditErrors serves apiserver_audit_error_total{plugin} from
// count, the events the audit backend plugin (log, webhook) lost so far.
// Each plugin is registered once.
func (m *Registry) RegisterAuditErrors(plugin string, count func() int64) error {
	if m == nil {
		return nil
	}
	return m.reg.Register(auditErrorsCollector{plugin, count})
}
