package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// WatchEventBuckets are apiserver_watch_events_sizes's: 1KiB doubling to
// 128KiB.
var WatchEventBuckets = prometheus.ExponentialBuckets(1024, 2, 8)

type watchMetrics struct {
	events *prometheus.CounterVec
	sizes  *prometheus.HistogramVec
}

func newWatchMetrics(reg prometheus.Registerer) watchMetrics {
	w := watchMetrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_events_total",
			Help: "Number of events sent in watch clients",
		}, []string{"group", "version", "kind"}),
		sizes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_watch_events_sizes",
			Help:    "Watch event size distribution in bytes",
			Buckets: WatchEventBuckets,
		}, []string{"group", "version", "kind"}),
	}
	reg.MustRegister(w.events, w.sizes)
	return w
}

// WatchEvents counts the events one watch sends; its series are resolved
// once per watch. The zero WatchEvents (from a nil Registry) counts
// nothing.
type WatchEvents struct {
	events prometheus.Counter
	sizes  prometheus.Observer
}

// WatchEventsOf returns the counter of a watch of the kind group, version,
// kind: a kind the server serves, never a client's string.
func (m *Registry) WatchEventsOf(group, version, kind string) WatchEvents {
	if m == nil {
		return WatchEvents{}
	}
	return WatchEvents{
		events: m.watch.events.WithLabelValues(group, version, kind),
		sizes:  m.watch.sizes.WithLabelValues(group, version, kind),
	}
}

// Sent counts one event of size bytes, as written to the client.
func (w WatchEvents) Sent(size int) {
	if w.events == nil {
		return
	}
	w.events.Inc()
	w.sizes.Observe(float64(size))
}
