package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
)

// benchValue is a Kubernetes-sized object: about 400 bytes of JSON.
func benchValue(i int) []byte {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "wardle.example.com/v1alpha1",
		"kind":       "Flunder",
		"metadata": map[string]any{
			"name": fmt.Sprintf("flunder-%06d", i), "namespace": "default",
			"uid":               fmt.Sprintf("0d6d4e9c-3c1f-4bde-9d0b-%012d", i),
			"creationTimestamp": "2026-01-01T00:00:00Z",
			"labels":            map[string]string{"app": "bench", "shard": fmt.Sprint(i % 10)},
		},
		"spec":   map[string]any{"reference": "flunder-ref", "referenceType": "Flunder", "size": i},
		"status": map[string]any{"phase": "Ready"},
	})
	return b
}

func benchKey(i int) string {
	return fmt.Sprintf("/wardle.example.com/flunders/default/flunder-%06d", i)
}

func fill(b *testing.B, s *Store, n int) {
	b.Helper()
	for i := range n {
		if _, err := s.Create(context.Background(), benchKey(i), benchValue(i)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCreate(b *testing.B) {
	s := New()
	defer s.Close()
	v := benchValue(1)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Create(ctx, benchKey(i), v); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkGet(b *testing.B) {
	s := New()
	defer s.Close()
	fill(b, s, 1000)
	ctx := context.Background()
	key := benchKey(500)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, key, storage.GetOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkList1000(b *testing.B) {
	s := New()
	defer s.Close()
	fill(b, s, 1000)
	ctx := context.Background()
	labelPred := storage.Predicate{
		Label: shardSelector("3"),
		GetAttrs: func(v []byte) (meta.Set, meta.Set, error) {
			var o struct {
				Metadata struct{ Labels map[string]string } `json:"metadata"`
			}
			err := json.Unmarshal(v, &o)
			return o.Metadata.Labels, nil, err
		},
	}
	for _, tc := range []struct {
		name string
		opts storage.ListOptions
		want int
	}{
		{"all", storage.ListOptions{}, 1000},
		{"page of 100", storage.ListOptions{Limit: 100}, 100},
		{"exact old revision", storage.ListOptions{Revision: 500, Match: storage.MatchExact}, 499},
		{"label selector (attrs memoized)", storage.ListOptions{Predicate: labelPred}, 100},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l, err := s.List(ctx, "/wardle.example.com/flunders/", tc.opts)
				if err != nil {
					b.Fatal(err)
				}
				if len(l.Items) != tc.want {
					b.Fatalf("%d items, want %d", len(l.Items), tc.want)
				}
			}
		})
	}
}

type shardSelector string

func (s shardSelector) Matches(set meta.Set) bool              { return set["shard"] == string(s) }
func (shardSelector) Empty() bool                              { return false }
func (s shardSelector) String() string                         { return "shard=" + string(s) }
func (shardSelector) RequiresExactMatch(string) (string, bool) { return "", false }

func BenchmarkGuaranteedUpdate(b *testing.B) {
	ctx := context.Background()
	update := func(cur storage.KeyValue) ([]byte, error) {
		v := append([]byte(nil), cur.Value...)
		v[len(v)-2]++ // a different value each time, same size
		return v, nil
	}
	b.Run("one key", func(b *testing.B) {
		s := New()
		defer s.Close()
		fill(b, s, 1)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.GuaranteedUpdate(ctx, benchKey(0), storage.UpdateOptions{}, update); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel on 1000 keys", func(b *testing.B) {
		s := New()
		defer s.Close()
		fill(b, s, 1000)
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				key := benchKey(int(next.Add(1) % 1000))
				if _, err := s.GuaranteedUpdate(ctx, key, storage.UpdateOptions{}, update); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkWatchFanOut measures one write delivered to 100 watchers of its
// prefix: ns/op is per write, until all 100 have received it.
func BenchmarkWatchFanOut(b *testing.B) {
	const watchers = 100
	s := New(WithWatchBuffer(1 << 30))
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v := benchValue(1)
	var remaining sync.WaitGroup
	var ws []storage.Watcher
	var total int
	b.ReportAllocs()
	b.ResetTimer()
	// b.N is known only inside the loop; each round counts its own.
	for i := 0; i < b.N; i++ {
		if i == 0 {
			total = b.N
			for range watchers {
				w, err := s.Watch(ctx, "/fan/", storage.WatchOptions{Revision: 1})
				if err != nil {
					b.Fatal(err)
				}
				ws = append(ws, w)
				remaining.Add(1)
				go func() {
					defer remaining.Done()
					n := 0
					for range w.ResultChan() {
						if n++; n == total {
							return
						}
					}
				}()
			}
		}
		if _, err := s.Create(ctx, fmt.Sprintf("/fan/%09d", i), v); err != nil {
			b.Fatal(err)
		}
	}
	remaining.Wait()
	b.StopTimer()
	for _, w := range ws {
		w.Stop()
	}
}
