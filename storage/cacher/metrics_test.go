package cacher_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/cacher"
	"github.com/apikit-dev/apikit/storage/memory"
)

// cacheFigures gathers m's watch cache series as name{labels} -> value.
func cacheFigures(t *testing.T, m *metrics.Registry) map[string]float64 {
	t.Helper()
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if !strings.Contains(f.GetName(), "cache") {
			continue
		}
		for _, s := range f.GetMetric() {
			var l []string
			for _, p := range s.GetLabel() {
				l = append(l, p.GetName()+"="+p.GetValue())
			}
			sort.Strings(l)
			out[f.GetName()+"{"+strings.Join(l, ",")+"}"] = s.GetCounter().GetValue() + s.GetGauge().GetValue()
		}
	}
	return out
}

// TestMetrics: a cache made by a Factory with metrics reports its
// initialization, the changes it takes from the backend, the LISTs it
// serves, its capacity and revision under kube-apiserver's names.
func TestMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mem := memory.New()
	defer mem.Close()
	notes := meta.GroupResource{Group: "example.com", Resource: "notes"}
	m := metrics.New()
	f := cacher.NewFactory(storage.Shared(mem), storage.WatchCacheConfig{Enabled: true, DefaultSize: 50}, cacher.WithMetrics(m))
	defer f.Close()
	s, err := f.For(notes)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.(*cacher.Cacher).WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	var rev int64
	for _, n := range []string{"a", "b"} {
		if rev, err = s.Create(ctx, storage.Key("/example.com/notes", "ns", n), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	// A list at the last write's revision is served by the cache once it
	// has the write.
	res, err := s.List(ctx, "/example.com/notes/", storage.ListOptions{Revision: rev, Match: storage.MatchNotOlderThan})
	if err != nil || len(res.Items) != 2 {
		t.Fatalf("List: %d items, %v", len(res.Items), err)
	}
	const gr = "group=example.com,resource=notes"
	want := map[string]float64{
		"apiserver_watch_cache_initializations_total{" + gr + "}":             1,
		"apiserver_watch_cache_events_received_total{" + gr + "}":             2,
		"apiserver_watch_cache_events_dispatched_total{" + gr + "}":           2,
		"apiserver_cache_list_total{group=example.com,index=,resource=notes}": 1,
		"apiserver_cache_list_returned_objects_total{" + gr + "}":             2,
		"watch_cache_capacity{" + gr + "}":                                    50,
		"apiserver_watch_cache_resource_version{" + gr + "}":                  float64(rev),
	}
	got := cacheFigures(t, m)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (have %v)", k, got[k], v, got)
		}
	}
}
