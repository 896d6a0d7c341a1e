package server

import (
	"context"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/registry"
)

// ObjectCountPeriod is how long the object counts of /metrics
// (apiserver_storage_objects, apiserver_resource_objects) are reused
// before a scrape counts again: kube-apiserver's default
// --etcd-count-metric-poll-period.
const ObjectCountPeriod = time.Minute

// objectCountTimeout bounds the counting of one resource during a scrape.
const objectCountTimeout = 5 * time.Second

// objectCounts counts the stored objects of the server's resources when
// /metrics is read, at most once per ObjectCountPeriod: no goroutine of
// its own, and nothing to pay when nobody scrapes.
type objectCounts struct {
	s *GenericServer

	mu     sync.Mutex
	at     time.Time
	counts []metrics.ObjectCount
}

func (o *objectCounts) get() []metrics.ObjectCount {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counts != nil && time.Since(o.at) < ObjectCountPeriod {
		return o.counts
	}
	var resources []registry.Resource
	for _, g := range o.s.APIGroups() {
		for _, v := range g.Versions {
			resources = append(resources, v.Resources...)
		}
	}
	counts := []metrics.ObjectCount{}
	count := func(c registry.Counter) (int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), objectCountTimeout)
		defer cancel()
		return c.Count(ctx)
	}
	registry.CountEach(resources, count, func(gr meta.GroupResource, n int64, err error) {
		if err != nil {
			n = -1 // as kube-apiserver reports a failed count
		}
		counts = append(counts, metrics.ObjectCount{Group: gr.Group, Resource: gr.Resource, Count: n})
	})
	o.counts, o.at = counts, time.Now()
	return counts
}
