package metrics_test

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/internal/race"
	"github.com/apikit-dev/apikit/metrics"
)

// storageSeries lists the etcd_request_* and apiserver_storage_list_*
// series of m with their counts (a histogram's sample count).
func storageSeries(t *testing.T, m *metrics.Registry) map[string]float64 {
	t.Helper()
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "etcd_request") && !strings.HasPrefix(f.GetName(), "apiserver_storage_list") {
			continue
		}
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetValue())
			}
			sort.Strings(labels)
			got[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = s.GetCounter().GetValue() + float64(s.GetHistogram().GetSampleCount())
		}
	}
	return got
}

// TestStorageSeriesAtFirstUse: a resource's storage series are made when
// first recorded, as kube-apiserver's are, not when its storage is made (a
// server installs dozens of resources an idle server never writes; their
// latency histograms were a sixth of its live heap), and an operation's
// error series at its first error.
func TestStorageSeriesAtFirstUse(t *testing.T) {
	m := metrics.New()
	rec := m.StorageRequestsOf("g", "widgets")
	start := time.Now()
	for _, step := range []struct {
		name string
		do   func()
		want map[string]float64
	}{
		{"made", func() {}, map[string]float64{}},
		{"a get", func() { rec.Observe(metrics.OpGet, start, nil) }, map[string]float64{
			"etcd_requests_total{g,get,widgets}":           1,
			"etcd_request_duration_seconds{g,get,widgets}": 1,
		}},
		{"a failed get", func() { rec.Observe(metrics.OpGet, start, errors.New("boom")) }, map[string]float64{
			"etcd_requests_total{g,get,widgets}":           2,
			"etcd_request_duration_seconds{g,get,widgets}": 2,
			"etcd_request_errors_total{g,get,widgets}":     1,
		}},
		{"a list", func() { rec.ObserveList(3) }, map[string]float64{
			"etcd_requests_total{g,get,widgets}":                       2,
			"etcd_request_duration_seconds{g,get,widgets}":             2,
			"etcd_request_errors_total{g,get,widgets}":                 1,
			"apiserver_storage_list_total{g,widgets}":                  1,
			"apiserver_storage_list_returned_objects_total{g,widgets}": 3,
		}},
		{"an unknown operation", func() { rec.Observe("watch", start, nil) }, map[string]float64{
			"etcd_requests_total{g,get,widgets}":                       2,
			"etcd_request_duration_seconds{g,get,widgets}":             2,
			"etcd_request_errors_total{g,get,widgets}":                 1,
			"apiserver_storage_list_total{g,widgets}":                  1,
			"apiserver_storage_list_returned_objects_total{g,widgets}": 3,
		}},
	} {
		step.do()
		got := storageSeries(t, m)
		if len(got) != len(step.want) {
			t.Errorf("after %s: series %v, want %v", step.name, got, step.want)
			continue
		}
		for k, v := range step.want {
			if got[k] != v {
				t.Errorf("after %s: %s = %v, want %v (all: %v)", step.name, k, got[k], v, got)
			}
		}
	}

	// Made, a series is kept: recording allocates nothing.
	if race.Enabled {
		return
	}
	if n := testing.AllocsPerRun(100, func() {
		rec.Observe(metrics.OpGet, start, nil)
		rec.ObserveList(1)
	}); n != 0 {
		t.Errorf("recording a get and a list: %v allocations, want 0", n)
	}
	var zero metrics.StorageRequests
	zero.Observe(metrics.OpGet, start, nil) // records nothing, does not panic
	zero.ObserveList(1)
}
