// Package metrics holds an API server's Prometheus registry: the request
// metrics kube-apiserver serves, under its names, labels and buckets, plus
// the Go runtime and process collectors, served at /metrics.
//
// Each server has its own Registry (nothing is registered globally), so two
// servers in one process never share a series. The handler chain's metrics
// filter (server/filters.WithMetrics) feeds it; the router says, through
// MarkRouted, whether a request reached a route, which keeps labels bounded.
package metrics

import (
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Component is the component label of resource requests, as kube-apiserver
// has it (its APIServerComponent); non-resource requests have "".
const Component = "apiserver"

// Request kinds of apiserver_current_inflight_requests.
const (
	ReadOnlyKind = "readOnly"
	MutatingKind = "mutating"
)

// OtherVerb is the verb label of a request whose verb is none of the
// expected ones, so that a client cannot mint a series per made-up method.
const OtherVerb = "other"

// Buckets of kube-apiserver's request histograms.
var (
	// DurationBuckets are apiserver_request_duration_seconds's, 5ms to 60s.
	DurationBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
		4, 5, 6, 8, 10, 15, 20, 30, 45, 60}
	// SizeBuckets are apiserver_response_sizes's, 1KB to 10^10 bytes.
	SizeBuckets = prometheus.ExponentialBuckets(1000, 10.0, 8)
)

var (
	requestLabels  = []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"}
	durationLabels = requestLabels[:len(requestLabels)-1]
	// The size and long-running metrics have no dry_run label.
	shapeLabels = []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}
)

// Registry is one server's metrics.
type Registry struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	durations   *prometheus.HistogramVec
	sizes       *prometheus.HistogramVec
	longRunning *prometheus.GaugeVec
	readOnly    prometheus.Gauge
	mutating    prometheus.Gauge

	seriesMu sync.RWMutex
	series   map[requestKey]*requestSeries

	auth    authMetrics
	audit   auditMetrics
	fc      *flowControlMetrics
	adm     admissionMetrics
	watch   watchMetrics
	storage storageMetrics
	objects *objectCountCollector

	watchCache watchCacheMetrics
	slis       slis
}

// New returns a Registry with the request metrics, those of
// authentication, authorization, audit, flow control, admission, watches
// and storage, and the Go and process collectors registered.
func New() *Registry {
	m := &Registry{
		reg:    prometheus.NewRegistry(),
		series: map[requestKey]*requestSeries{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
		}, requestLabels),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
			Buckets: DurationBuckets,
		}, durationLabels),
		sizes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_response_sizes",
			Help:    "Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.",
			Buckets: SizeBuckets,
		}, shapeLabels),
		longRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
		}, shapeLabels),
	}
	inflight := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apiserver_current_inflight_requests",
		Help: "Number of requests currently in this apiserver (flow-control queues included) per request kind; long-running requests are not counted.",
	}, []string{"request_kind"})
	m.readOnly = inflight.WithLabelValues(ReadOnlyKind)
	m.mutating = inflight.WithLabelValues(MutatingKind)
	m.reg.MustRegister(m.requests, m.durations, m.sizes, m.longRunning, inflight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.auth = newAuthMetrics(m.reg)
	m.audit = newAuditMetrics(m.reg)
	m.fc = newFlowControlMetrics(m.reg)
	m.adm = newAdmissionMetrics(m.reg)
	m.watch = newWatchMetrics(m.reg)
	m.storage = newStorageMetrics(m.reg)
	m.watchCache = newWatchCacheMetrics(m.reg)
	m.slis = newSLIs()
	m.objects = &objectCountCollector{}
	m.reg.MustRegister(m.objects)
	return m
}

// Registerer is where other parts of the server add their metrics.
func (m *Registry) Registerer() prometheus.Registerer { return m.reg }

// Gatherer reads the registry, as /metrics does.
func (m *Registry) Gatherer() prometheus.Gatherer { return m.reg }

// descName takes a metric's name out of its descriptor, which has no
// accessor for it.
var descName = regexp.MustCompile(`^Desc\{fqName: "([^"]+)"`)

// Names lists, sorted, the metric families the registry serves: every
// family of a collector that describes itself, whether or not it has a
// series yet (apiserver_audit_error_total, registered per audit backend,
// is not listed). Dashboards and docs are checked against it.
func (m *Registry) Names() []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		m.reg.Describe(ch)
		close(ch)
	}()
	seen := map[string]bool{}
	var names []string
	for d := range ch {
		if n := descName.FindStringSubmatch(d.String()); n != nil && !seen[n[1]] {
			seen[n[1]] = true
			names = append(names, n[1])
		}
	}
	sort.Strings(names)
	return names
}

// Handler serves the registry in the Prometheus exposition format. It is
// behind the handler chain like any path: authorization decides who reads
// it (get on the non-resource URL /metrics).
func (m *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Labels are the labels a request is counted under. Every field must come
// from a bounded set: the filter makes sure of it.
type Labels struct {
	Verb, DryRun, Group, Version, Resource, Subresource, Scope, Component string
}

// ObserveRequest counts a finished request, its latency and, for reads
// (GET and LIST, as kube-apiserver), its response size.
func (m *Registry) ObserveRequest(l *Labels, code int, size int64, elapsed time.Duration) {
	s := m.requestSeriesOf(l, code)
	s.count.Inc()
	s.duration.Observe(elapsed.Seconds())
	if s.size != nil {
		s.size.Observe(float64(size))
	}
}

type requestKey struct {
	l    Labels
	code int
}

// requestSeries are the series of one set of request labels and code.
type requestSeries struct {
	count          prometheus.Counter
	duration, size prometheus.Observer // size: nil but for GET and LIST
}

// requestSeriesOf returns the series of l and code, from the cache of
// those seen: the labels are bounded, and a Go map finds nine strings far
// faster than three vectors hash and validate them, which was most of what
// the metrics cost a request.
func (m *Registry) requestSeriesOf(l *Labels, code int) *requestSeries {
	k := requestKey{*l, code}
	m.seriesMu.RLock()
	s := m.series[k]
	m.seriesMu.RUnlock()
	if s != nil {
		return s
	}
	s = &requestSeries{
		count:    m.requests.WithLabelValues(l.Verb, l.DryRun, l.Group, l.Version, l.Resource, l.Subresource, l.Scope, l.Component, codeString(code)),
		duration: m.durations.WithLabelValues(l.Verb, l.DryRun, l.Group, l.Version, l.Resource, l.Subresource, l.Scope, l.Component),
	}
	if l.Verb == "GET" || l.Verb == "LIST" {
		s.size = m.sizes.WithLabelValues(l.Verb, l.Group, l.Version, l.Resource, l.Subresource, l.Scope, l.Component)
	}
	m.seriesMu.Lock()
	defer m.seriesMu.Unlock()
	if prev := m.series[k]; prev != nil {
		return prev
	}
	m.series[k] = s
	return s
}

// LongRunningStarted counts a long-running request as active until the
// returned function is called.
func (m *Registry) LongRunningStarted(l *Labels) (done func()) {
	g := m.longRunning.WithLabelValues(l.Verb, l.Group, l.Version, l.Resource, l.Subresource, l.Scope, l.Component)
	g.Inc()
	return g.Dec
}

// Inflight is the gauge of executing requests of one kind (readOnly or
// mutating) that are not long-running: Inc when one starts, Dec when it
// ends.
func (m *Registry) Inflight(mutating bool) prometheus.Gauge {
	if mutating {
		return m.mutating
	}
	return m.readOnly
}

// codeString spares the common codes an allocation.
func codeString(code int) string {
	switch code {
	case http.StatusOK:
		return "200"
	case http.StatusCreated:
		return "201"
	case http.StatusNotFound:
		return "404"
	case http.StatusConflict:
		return "409"
	}
	return strconv.Itoa(code)
}
