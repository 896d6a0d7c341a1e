package backend_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/backend"
)

// TestStorageMetrics: each resource's requests to the backend are counted
// and timed under kube-apiserver's etcd_request_* names, labelled with the
// operation and the resource; answers such as "not found" are not errors.
func TestStorageMetrics(t *testing.T) {
	ctx := context.Background()
	m := metrics.New()
	st := backend.New(backend.Config{Backend: backend.Memory, Metrics: m})
	t.Cleanup(func() { _ = st.Close() })
	widgets := meta.GroupResource{Group: "example.com", Resource: "widgets"}
	s, err := st.For(widgets)
	if err != nil {
		t.Fatal(err)
	}
	key := storage.Key(storage.KeyRoot(widgets), "ns", "a")
	if _, err := s.Create(ctx, key, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, key, []byte(`{}`)); err == nil {
		t.Fatal("created a twice")
	}
	if _, err := s.Get(ctx, key, storage.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, key+"x", storage.GetOptions{}); storage.CodeOf(err) != storage.CodeNotFound {
		t.Fatalf("Get of a missing key: %v", err)
	}
	if _, err := s.List(ctx, storage.KeyRoot(widgets)+"/", storage.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, key, storage.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	var buckets []float64
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "etcd_") && !strings.HasPrefix(f.GetName(), "apiserver_storage_list") {
			continue
		}
		for _, mm := range f.GetMetric() {
			var parts []string
			for _, l := range mm.GetLabel() {
				parts = append(parts, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(parts)
			got[f.GetName()+"{"+strings.Join(parts, ",")+"}"] = mm.GetCounter().GetValue() + float64(mm.GetHistogram().GetSampleCount())
			if h := mm.GetHistogram(); h != nil && buckets == nil {
				for _, b := range h.GetBucket() {
					buckets = append(buckets, b.GetUpperBound())
				}
			}
		}
	}
	for k, want := range map[string]float64{
		"etcd_requests_total{group=example.com,operation=create,resource=widgets}":          2,
		"etcd_requests_total{group=example.com,operation=get,resource=widgets}":             2,
		"etcd_requests_total{group=example.com,operation=list,resource=widgets}":            1,
		"etcd_requests_total{group=example.com,operation=delete,resource=widgets}":          1,
		"etcd_request_duration_seconds{group=example.com,operation=get,resource=widgets}":   2,
		"etcd_request_errors_total{group=example.com,operation=create,resource=widgets}":    0,
		"etcd_request_errors_total{group=example.com,operation=get,resource=widgets}":       0,
		"apiserver_storage_list_total{group=example.com,resource=widgets}":                  1,
		"apiserver_storage_list_returned_objects_total{group=example.com,resource=widgets}": 1,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	kube := []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60}
	if len(buckets) != len(kube) {
		t.Fatalf("etcd_request_duration_seconds buckets %v, want kube-apiserver's %v", buckets, kube)
	}
	for i := range kube {
		if buckets[i] != kube[i] {
			t.Fatalf("etcd_request_duration_seconds buckets %v, want kube-apiserver's %v", buckets, kube)
		}
	}
}
