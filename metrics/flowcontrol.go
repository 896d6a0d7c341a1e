package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons of apiserver_flowcontrol_rejected_requests_total, kube-apiserver's.
const (
	RejectQueueFull        = "queue-full"
	RejectConcurrencyLimit = "concurrency-limit"
	RejectTimeout          = "time-out"
	RejectCancelled        = "cancelled"
)

// FlowControlWaitBuckets are apiserver_flowcontrol_request_wait_duration_seconds's
// and _request_execution_seconds's, kube-apiserver's.
var FlowControlWaitBuckets = []float64{0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30}

type flowControlMetrics struct {
	// series caches the series of each priority level and flow schema
	// seen: label lookups were most of what flow control's metrics cost
	// a request.
	mu     sync.RWMutex
	series map[fcKey]*fcSeries

	dispatched *prometheus.CounterVec
	rejected   *prometheus.CounterVec
	inQueue    *prometheus.GaugeVec
	executing  *prometheus.GaugeVec
	seats      *prometheus.GaugeVec
	wait       *prometheus.HistogramVec
	execution  *prometheus.HistogramVec
}

type fcKey struct{ priorityLevel, flowSchema string }

// fcSeries are one priority level's and flow schema's series.
type fcSeries struct {
	inQueue, executing, seats prometheus.Gauge
	dispatched                prometheus.Counter
	waitDispatched            prometheus.Observer
	execRegular, execWatch    prometheus.Observer
}

// seriesOf returns the series of a priority level and flow schema.
func (f *flowControlMetrics) seriesOf(pl, fs string) *fcSeries {
	k := fcKey{pl, fs}
	f.mu.RLock()
	s := f.series[k]
	f.mu.RUnlock()
	if s != nil {
		return s
	}
	s = &fcSeries{
		inQueue:        f.inQueue.WithLabelValues(pl, fs),
		executing:      f.executing.WithLabelValues(pl, fs),
		seats:          f.seats.WithLabelValues(pl, fs),
		dispatched:     f.dispatched.WithLabelValues(pl, fs),
		waitDispatched: f.wait.WithLabelValues(pl, fs, "true"),
		execRegular:    f.execution.WithLabelValues(pl, fs, "regular"),
		execWatch:      f.execution.WithLabelValues(pl, fs, "watch"),
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if prev := f.series[k]; prev != nil {
		return prev
	}
	f.series[k] = s
	return s
}

func newFlowControlMetrics(reg prometheus.Registerer) *flowControlMetrics {
	plfs := []string{"priority_level", "flow_schema"}
	f := &flowControlMetrics{series: map[fcKey]*fcSeries{},
		dispatched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_flowcontrol_dispatched_requests_total",
			Help: "Number of requests executed by API Priority and Fairness subsystem",
		}, plfs),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_flowcontrol_rejected_requests_total",
			Help: "Number of requests rejected by API Priority and Fairness subsystem",
		}, []string{"priority_level", "flow_schema", "reason"}),
		inQueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_inqueue_requests",
			Help: "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
		}, plfs),
		executing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_executing_requests",
			Help: "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
		}, plfs),
		seats: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_executing_seats",
			Help: "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem",
		}, plfs),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_flowcontrol_request_wait_duration_seconds",
			Help:    "Length of time a request spent waiting in its queue",
			Buckets: FlowControlWaitBuckets,
		}, []string{"priority_level", "flow_schema", "execute"}),
		execution: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_flowcontrol_request_execution_seconds",
			Help:    "Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem",
			Buckets: FlowControlWaitBuckets,
		}, []string{"priority_level", "flow_schema", "type"}),
	}
	reg.MustRegister(f.dispatched, f.rejected, f.inQueue, f.executing, f.seats, f.wait, f.execution)
	return f
}

// FlowControlRequest follows one request through API Priority and
// Fairness under its priority level and flow schema, both names from the
// server's configuration (a bounded set). Its methods do nothing on a
// FlowControlRequest from a nil Registry.
type FlowControlRequest struct {
	m                         *Registry
	s                         *fcSeries
	priorityLevel, flowSchema string
	watch                     bool
	arrived, dispatched       time.Time
	seats                     int
}

// FlowControlArrived counts a request as waiting for its turn (in a queue,
// or for the instant it takes to find it may run at once) until Dispatched
// or Rejected.
func (m *Registry) FlowControlArrived(priorityLevel, flowSchema string, watch bool) FlowControlRequest {
	if m == nil {
		return FlowControlRequest{}
	}
	r := FlowControlRequest{m: m, s: m.fc.seriesOf(priorityLevel, flowSchema),
		priorityLevel: priorityLevel, flowSchema: flowSchema, watch: watch, arrived: time.Now()}
	r.s.inQueue.Inc()
	return r
}

// Dispatched records that the request runs now, holding seats.
func (r *FlowControlRequest) Dispatched(seats int) {
	if r.m == nil {
		return
	}
	r.s.inQueue.Dec()
	r.dispatched = time.Now()
	r.s.waitDispatched.Observe(r.dispatched.Sub(r.arrived).Seconds())
	r.s.dispatched.Inc()
	r.s.executing.Inc()
	r.seats = seats
	r.s.seats.Add(float64(seats))
}

// Rejected records that the request will not run, and why (RejectQueueFull,
// RejectConcurrencyLimit, RejectTimeout, RejectCancelled).
func (r *FlowControlRequest) Rejected(reason string) {
	if r.m == nil {
		return
	}
	fc := r.m.fc
	r.s.inQueue.Dec()
	fc.wait.WithLabelValues(r.priorityLevel, r.flowSchema, "false").Observe(time.Since(r.arrived).Seconds())
	fc.rejected.WithLabelValues(r.priorityLevel, r.flowSchema, reason).Inc()
}

// Finished records that a dispatched request gave its seats back (a
// watch: once its initial events were sent).
func (r *FlowControlRequest) Finished() {
	if r.m == nil || r.dispatched.IsZero() {
		return
	}
	r.s.executing.Dec()
	r.s.seats.Sub(float64(r.seats))
	exec := r.s.execRegular
	if r.watch {
		exec = r.s.execWatch
	}
	exec.Observe(time.Since(r.dispatched).Seconds())
}

// SeatLimits are one priority level's seat limits, as
// apiserver_flowcontrol_nominal_limit_seats, _lower_limit_seats,
// _upper_limit_seats and _current_limit_seats report them.
type SeatLimits struct {
	PriorityLevel                  string
	Nominal, Lower, Upper, Current int
}

// SeatLimiter is a flow-control policy that has priority levels with
// seat limits (flowcontrol.APF).
type SeatLimiter interface {
	SeatLimits() []SeatLimits
}

var (
	nominalSeatsDesc = prometheus.NewDesc("apiserver_flowcontrol_nominal_limit_seats",
		"Nominal number of execution seats configured for each priority level", []string{"priority_level"}, nil)
	lowerSeatsDesc = prometheus.NewDesc("apiserver_flowcontrol_lower_limit_seats",
		"Configured lower bound on number of execution seats available to each priority level", []string{"priority_level"}, nil)
	upperSeatsDesc = prometheus.NewDesc("apiserver_flowcontrol_upper_limit_seats",
		"Configured upper bound on number of execution seats available to each priority level", []string{"priority_level"}, nil)
	currentSeatsDesc = prometheus.NewDesc("apiserver_flowcontrol_current_limit_seats",
		"current derived number of execution seats available to each priority level", []string{"priority_level"}, nil)
)

// seatLimitsCollector reads the limits when scraped: they change with the
// configuration and with borrowing, and reading them then costs requests
// nothing.
type seatLimitsCollector struct{ src SeatLimiter }

func (c seatLimitsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- nominalSeatsDesc
	ch <- lowerSeatsDesc
	ch <- upperSeatsDesc
	ch <- currentSeatsDesc
}

func (c seatLimitsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range c.src.SeatLimits() {
		for _, v := range []struct {
			d *prometheus.Desc
			n int
		}{{nominalSeatsDesc, l.Nominal}, {lowerSeatsDesc, l.Lower}, {upperSeatsDesc, l.Upper}, {currentSeatsDesc, l.Current}} {
			ch <- prometheus.MustNewConstMetric(v.d, prometheus.GaugeValue, float64(v.n), l.PriorityLevel)
		}
	}
}

// RegisterSeatLimits serves src's seat limits per priority level. A
// registry takes one source; registering another is an error.
func (m *Registry) RegisterSeatLimits(src SeatLimiter) error {
	if m == nil {
		return nil
	}
	return m.reg.Register(seatLimitsCollector{src})
}
