package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Storage operations of the etcd_request_* metrics.
const (
	OpCreate = "create"
	OpGet    = "get"
	OpList   = "list"
	OpUpdate = "update"
	OpDelete = "delete"
)

type storageMetrics struct {
	latency      *prometheus.HistogramVec
	requests     *prometheus.CounterVec
	errors       *prometheus.CounterVec
	lists        *prometheus.CounterVec
	listReturned *prometheus.CounterVec
}

func newStorageMetrics(reg prometheus.Registerer) storageMetrics {
	ogr := []string{"operation", "group", "resource"}
	gr := []string{"group", "resource"}
	s := storageMetrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "etcd_request_duration_seconds",
			Help:    "Etcd request latency in seconds for each operation and object type.",
			Buckets: DurationBuckets,
		}, ogr),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcd_requests_total",
			Help: "Etcd request counts for each operation and object type.",
		}, ogr),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcd_request_errors_total",
			Help: "Etcd failed request counts for each operation and object type.",
		}, ogr),
		lists: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_storage_list_total",
			Help: "Number of LIST requests served from storage",
		}, gr),
		listReturned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_storage_list_returned_objects_total",
			Help: "Number of objects returned for a LIST request from storage",
		}, gr),
	}
	reg.MustRegister(s.latency, s.requests, s.errors, s.lists, s.listReturned)
	return s
}

// StorageRequests records the storage requests of one resource. Its
// series are made at their first use, as kube-apiserver makes them: a
// server installs dozens of resources (RBAC, flow control, admission
// registration) that an idle server never writes, and five latency
// histograms per resource made up front were a sixth of an idle server's
// live heap. An operation's error series appears at its first error, as
// kube-apiserver's does. The zero StorageRequests (from a nil Registry)
// records nothing.
type StorageRequests struct{ r *storageRecorder }

// storageRecorder holds one resource's series once they are made; they are
// looked up by label values once, not at each request.
type storageRecorder struct {
	m               *storageMetrics
	group, resource string
	ops             [len(storageOpIndex)]atomic.Pointer[storageOp]
	list            atomic.Pointer[storageList]
}

type storageOp struct {
	latency  prometheus.Observer
	requests prometheus.Counter
	errors   atomic.Pointer[prometheus.Counter]
}

type storageList struct{ lists, returned prometheus.Counter }

// storageOpIndex numbers the operations for storageRecorder.ops.
var storageOpIndex = [...]string{OpCreate, OpGet, OpList, OpUpdate, OpDelete}

func opIndex(op string) int {
	for i, o := range storageOpIndex {
		if o == op {
			return i
		}
	}
	return -1
}

// StorageRequestsOf returns the recorder of the storage requests of the
// resource group/resource (a resource the server serves). It makes no
// series: each is made when first recorded.
func (m *Registry) StorageRequestsOf(group, resource string) StorageRequests {
	if m == nil {
		return StorageRequests{}
	}
	return StorageRequests{r: &storageRecorder{m: &m.storage, group: group, resource: resource}}
}

// Observe records one request of operation op (OpCreate, OpGet...) that
// started at start and failed with err (nil on success).
func (r StorageRequests) Observe(op string, start time.Time, err error) {
	if r.r == nil {
		return
	}
	i := opIndex(op)
	if i < 0 {
		return
	}
	o := r.r.ops[i].Load()
	if o == nil {
		// Racing first requests resolve the same series: either may win.
		o = &storageOp{
			latency:  r.r.m.latency.WithLabelValues(op, r.r.group, r.r.resource),
			requests: r.r.m.requests.WithLabelValues(op, r.r.group, r.r.resource),
		}
		if !r.r.ops[i].CompareAndSwap(nil, o) {
			o = r.r.ops[i].Load()
		}
	}
	o.latency.Observe(time.Since(start).Seconds())
	o.requests.Inc()
	if err != nil {
		e := o.errors.Load()
		if e == nil {
			c := r.r.m.errors.WithLabelValues(op, r.r.group, r.r.resource)
			o.errors.CompareAndSwap(nil, &c)
			e = o.errors.Load()
		}
		(*e).Inc()
	}
}

// ObserveList counts a LIST served by the storage with the objects it
// returned.
func (r StorageRequests) ObserveList(returned int) {
	if r.r == nil {
		return
	}
	l := r.r.list.Load()
	if l == nil {
		l = &storageList{
			lists:    r.r.m.lists.WithLabelValues(r.r.group, r.r.resource),
			returned: r.r.m.listReturned.WithLabelValues(r.r.group, r.r.resource),
		}
		if !r.r.list.CompareAndSwap(nil, l) {
			l = r.r.list.Load()
		}
	}
	l.lists.Inc()
	l.returned.Add(float64(returned))
}

// ObjectCount is the number of stored objects of one resource; -1 when
// counting failed, as kube-apiserver reports it.
type ObjectCount struct {
	Group, Resource string
	Count           int64
}

var (
	storageObjectsDesc = prometheus.NewDesc("apiserver_storage_objects",
		"[DEPRECATED, consider using apiserver_resource_objects instead] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
		[]string{"resource"}, nil)
	resourceObjectsDesc = prometheus.NewDesc("apiserver_resource_objects",
		"Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
		[]string{"group", "resource"}, nil)
)

// objectCountCollector reports the counts of every source registered, a
// resource once (servers of a chain sharing a registry may serve one
// resource each, never one twice, but a scrape must not fail if they do).
type objectCountCollector struct {
	mu      sync.Mutex
	sources []func() []ObjectCount
}

func (c *objectCountCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storageObjectsDesc
	ch <- resourceObjectsDesc
}

func (c *objectCountCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	sources := c.sources
	c.mu.Unlock()
	seen := map[ObjectCount]bool{}
	for _, count := range sources {
		for _, n := range count() {
			key := ObjectCount{Group: n.Group, Resource: n.Resource}
			if seen[key] {
				continue
			}
			seen[key] = true
			gr := n.Resource
			if n.Group != "" {
				gr += "." + n.Group
			}
			ch <- prometheus.MustNewConstMetric(storageObjectsDesc, prometheus.GaugeValue, float64(n.Count), gr)
			ch <- prometheus.MustNewConstMetric(resourceObjectsDesc, prometheus.GaugeValue, float64(n.Count), n.Group, n.Resource)
		}
	}
}

// RegisterObjectCounts adds count to the sources of apiserver_storage_objects
// and apiserver_resource_objects, called when /metrics is read; count
// decides how fresh its figures are.
func (m *Registry) RegisterObjectCounts(count func() []ObjectCount) {
	if m == nil {
		return
	}
	m.objects.mu.Lock()
	defer m.objects.mu.Unlock()
	m.objects.sources = append(m.objects.sources, count)
}
