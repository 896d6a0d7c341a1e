package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

type watchCacheMetrics struct {
	received, dispatched, initializations *prometheus.CounterVec
	lists, listReturned                   *prometheus.CounterVec
	capacity, revision                    *prometheus.GaugeVec
}

func newWatchCacheMetrics(reg prometheus.Registerer) watchCacheMetrics {
	gr := []string{"group", "resource"}
	w := watchCacheMetrics{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_events_received_total",
			Help: "Counter of events received in watch cache broken by resource type.",
		}, gr),
		dispatched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_events_dispatched_total",
			Help: "Counter of events dispatched in watch cache broken by resource type.",
		}, gr),
		initializations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_initializations_total",
			Help: "Counter of watch cache initializations broken by resource type.",
		}, gr),
		lists: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_cache_list_total",
			Help: "Number of LIST requests served from watch cache",
		}, []string{"group", "resource", "index"}),
		listReturned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_cache_list_returned_objects_total",
			Help: "Number of objects returned for a LIST request from watch cache",
		}, gr),
		capacity: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "watch_cache_capacity",
			Help: "Total capacity of watch cache broken by resource type.",
		}, gr),
		revision: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_watch_cache_resource_version",
			Help: "Current resource version of watch cache broken by resource type. This is truncated to the 15 least significant digits.",
		}, gr),
	}
	reg.MustRegister(w.received, w.dispatched, w.initializations, w.lists, w.listReturned, w.capacity, w.revision)
	return w
}

// WatchCache records one resource's watch cache; its series are resolved
// once, when the cache is made. Its methods do nothing on nil (a cache
// without metrics).
type WatchCache struct {
	received, dispatched, initializations prometheus.Counter
	lists, listReturned                   prometheus.Counter
	capacity, revision                    prometheus.Gauge
}

// WatchCacheOf returns the recorder of the watch cache of group/resource
// (a resource the server serves); nil from a nil Registry.
func (m *Registry) WatchCacheOf(group, resource string) *WatchCache {
	if m == nil {
		return nil
	}
	w := &m.watchCache
	return &WatchCache{
		received:        w.received.WithLabelValues(group, resource),
		dispatched:      w.dispatched.WithLabelValues(group, resource),
		initializations: w.initializations.WithLabelValues(group, resource),
		// The cache has no indexes: every list scans the prefix.
		lists:        w.lists.WithLabelValues(group, resource, ""),
		listReturned: w.listReturned.WithLabelValues(group, resource),
		capacity:     w.capacity.WithLabelValues(group, resource),
		revision:     w.revision.WithLabelValues(group, resource),
	}
}

// Capacity records the window's configured size (0: a dynamic window).
func (w *WatchCache) Capacity(n int) {
	if w != nil {
		w.capacity.Set(float64(n))
	}
}

// Initialized counts a complete state the cache installed (its first list,
// or one after the backend lost its revision), at revision rev.
func (w *WatchCache) Initialized(rev int64) {
	if w != nil {
		w.initializations.Inc()
		w.Revision(rev)
	}
}

// Received counts a change the cache took from the backend's watch and
// handed to its watchers.
func (w *WatchCache) Received(rev int64) {
	if w != nil {
		w.received.Inc()
		w.dispatched.Inc()
		w.Revision(rev)
	}
}

// Revision records the revision the cache is at, truncated as
// kube-apiserver truncates it, to stay exact in a float64.
func (w *WatchCache) Revision(rev int64) {
	if w != nil {
		w.revision.Set(float64(rev % 1_000_000_000_000_000))
	}
}

// Listed counts a LIST the cache served, with the objects it returned.
func (w *WatchCache) Listed(returned int) {
	if w != nil {
		w.lists.Inc()
		w.listReturned.Add(float64(returned))
	}
}
