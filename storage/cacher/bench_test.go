package cacher

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/etcd3"
)

// benchValue is about the size of a stored Flunder.
func benchValue(i int) []byte {
	return fmt.Appendf(nil, `{"kind":"Flunder","apiVersion":"wardle.example.com/v1beta1","metadata":{"name":"flunder-%05d",`+
		`"namespace":"bench","uid":"0b7e6c0e-8d7e-4a4b-9c55-6f7f1c1d%04d","generation":1,"creationTimestamp":"2026-01-01T00:00:00Z",`+
		`"labels":{"app":"bench","index":"%d"}},"spec":{"flunderReference":"flunder-ref-%05d","referenceType":"Flunder"},"status":{}}`,
		i, i%10000, i, i)
}

// benchBackends are the stores the storage benchmarks compare: a backend
// alone and with a cache in front. etcd runs only when a binary can be had.
func benchBackends(b *testing.B) []struct {
	name string
	new  func(b *testing.B) storage.Interface
} {
	var (
		once   sync.Once
		client *clientv3.Client
		n      int
	)
	top := b // etcd lives as long as the whole benchmark
	etcdClient := func(*testing.B) *clientv3.Client {
		once.Do(func() {
			c, err := clientv3.New(clientv3.Config{Endpoints: etcdtest.Start(top), DialTimeout: 10 * time.Second, Logger: etcd3.ZapLogger(nil, nil)})
			if err != nil {
				top.Fatal(err)
			}
			client = c
		})
		n++
		return client
	}
	b.Cleanup(func() {
		if client != nil {
			client.Close()
		}
	})
	return []struct {
		name string
		new  func(b *testing.B) storage.Interface
	}{
		{"memory", func(b *testing.B) storage.Interface {
			m := newMemory()
			b.Cleanup(func() { m.Close() })
			return m
		}},
		{"cache/memory", func(b *testing.B) storage.Interface { return testCacher(b, newMemory()) }},
		{"etcd", func(b *testing.B) storage.Interface {
			s := etcd3.New(etcdClient(b), etcd3.WithPrefix(fmt.Sprintf("/bench-%d", n)))
			b.Cleanup(func() { s.Close() })
			return s
		}},
		{"cache/etcd", func(b *testing.B) storage.Interface {
			return testCacher(b, etcd3.New(etcdClient(b), etcd3.WithPrefix(fmt.Sprintf("/bench-%d", n))))
		}},
	}
}

// fill creates n objects under /b/ with 16 writers.
func fill(b *testing.B, s storage.Interface, n int) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				if _, err := s.Create(ctx, fmt.Sprintf("/b/flunder-%05d", i), benchValue(i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// BenchmarkList5000 lists 5,000 objects consistently (resourceVersion "").
func BenchmarkList5000(b *testing.B) {
	for _, bk := range benchBackends(b) {
		b.Run(bk.name, func(b *testing.B) {
			s := bk.new(b)
			fill(b, s, 5000)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				l, err := s.List(ctx, "/b/", storage.ListOptions{})
				if err != nil || len(l.Items) != 5000 {
					b.Fatalf("List: %d items, %v", len(l.Items), err)
				}
			}
		})
	}
}

// BenchmarkPagedList5000 pages through 5,000 objects 500 at a time, as
// kubectl and the load benchmark's paged LIST do: the first page
// consistently, the others at its revision. Each page counts the items
// after it (RemainingItemCount) from the history's index, not by walking
// them.
func BenchmarkPagedList5000(b *testing.B) {
	for _, bk := range benchBackends(b) {
		if strings.Contains(bk.name, "etcd") {
			continue // etcd's own paging: not the history's
		}
		b.Run(bk.name, func(b *testing.B) {
			s := bk.new(b)
			fill(b, s, 5000)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				pageAll(ctx, b, s, 5000)
			}
		})
	}
}

// pageAll lists the n objects under /b/ in pages of 500, checking each
// page's RemainingItemCount.
func pageAll(ctx context.Context, b *testing.B, s storage.Interface, n int) {
	opts := storage.ListOptions{Limit: 500}
	got := 0
	for {
		l, err := s.List(ctx, "/b/", opts)
		if err != nil {
			b.Fatal(err)
		}
		got += len(l.Items)
		if l.Continue == "" {
			break
		}
		if l.RemainingItemCount == nil || *l.RemainingItemCount != int64(n-got) {
			b.Fatalf("RemainingItemCount %v after %d items", l.RemainingItemCount, got)
		}
		opts.Continue = l.Continue
	}
	if got != n {
		b.Fatalf("%d objects in the pages", got)
	}
}

// BenchmarkGet reads one object consistently.
func BenchmarkGet(b *testing.B) {
	for _, bk := range benchBackends(b) {
		b.Run(bk.name, func(b *testing.B) {
			s := bk.new(b)
			fill(b, s, 1000)
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.Get(ctx, fmt.Sprintf("/b/flunder-%05d", i%1000), storage.GetOptions{}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkWatchFanOut measures one change delivered to 1,000 watchers:
// the time from the write until every watcher has it.
func BenchmarkWatchFanOut(b *testing.B) {
	const watchers = 1000
	for _, bk := range benchBackends(b) {
		b.Run(bk.name, func(b *testing.B) {
			s := bk.new(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rev, err := s.Create(ctx, "/b/x", benchValue(0))
			if err != nil {
				b.Fatal(err)
			}
			got := make(chan struct{}, watchers)
			var wg sync.WaitGroup
			for range watchers {
				w, err := s.Watch(ctx, "/b/", storage.WatchOptions{Revision: rev})
				if err != nil {
					b.Fatal(err)
				}
				wg.Go(func() {
					defer w.Stop()
					for ev := range w.ResultChan() {
						if ev.Type == storage.Modified {
							got <- struct{}{}
						}
					}
				})
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := s.GuaranteedUpdate(ctx, "/b/x", storage.UpdateOptions{}, func(storage.KeyValue) ([]byte, error) {
					return benchValue(i), nil
				}); err != nil {
					b.Fatal(err)
				}
				for range watchers {
					<-got
				}
			}
			b.StopTimer()
			cancel()
			wg.Wait()
		})
	}
}

// BenchmarkApply measures what one change costs the cache: recording the
// new version, appending it to a window of 1,000 changes and dropping the
// oldest, in a cache of 5,000 objects. Its B/op is what a change costs in
// memory while the window holds it (the value itself aside).
func BenchmarkApply(b *testing.B) {
	c := testCacher(b, newMemory(), WithCapacity(1000))
	fill(b, c, 5000)
	ctx := context.Background()
	if _, err := c.Get(ctx, "/b/flunder-00000", storage.GetOptions{}); err != nil { // caught up
		b.Fatal(err)
	}
	// Stop the backend watch's feed: the benchmark applies changes itself.
	c.cancel()
	c.wg.Wait()
	value := benchValue(0)
	rev := c.h.Revision()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		rev++
		c.apply(storage.Event{Type: storage.Modified, Key: fmt.Sprintf("/b/flunder-%05d", i%5000), Value: value, Revision: rev})
		i++
	}
}

// BenchmarkPagedListUnderWrites pages through 5,000 objects, 500 at a
// time, each page at the first page's revision, while a writer changes
// them as fast as it can.
func BenchmarkPagedListUnderWrites(b *testing.B) {
	c := testCacher(b, newMemory(), WithCapacity(100000))
	fill(b, c, 5000)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			_, _ = c.GuaranteedUpdate(ctx, fmt.Sprintf("/b/flunder-%05d", i%5000), storage.UpdateOptions{},
				func(storage.KeyValue) ([]byte, error) { return benchValue(i), nil })
		}
	})
	b.ReportAllocs()
	for b.Loop() {
		pageAll(ctx, b, c, 5000)
	}
	b.StopTimer()
	cancel()
	wg.Wait()
}

// BenchmarkWatchNamespaces measures one change among 1,000 watchers of
// 1,000 namespaces: the time until the one watcher it concerns has it,
// and what waking the others would cost.
func BenchmarkWatchNamespaces(b *testing.B) {
	const watchers = 1000
	c := testCacher(b, newMemory())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	from := c.h.Revision()
	got := make([]chan struct{}, watchers)
	var wg sync.WaitGroup
	for i := range watchers {
		w, err := c.Watch(ctx, fmt.Sprintf("/b/ns%04d/", i), storage.WatchOptions{Revision: from})
		if err != nil {
			b.Fatal(err)
		}
		got[i] = make(chan struct{}, 1)
		wg.Go(func() {
			defer w.Stop()
			for range w.ResultChan() {
				got[i] <- struct{}{}
			}
		})
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ns := i % watchers
		if _, err := c.GuaranteedUpdate(ctx, fmt.Sprintf("/b/ns%04d/x", ns), storage.UpdateOptions{IgnoreNotFound: true},
			func(storage.KeyValue) ([]byte, error) { return benchValue(i), nil }); err != nil {
			b.Fatal(err)
		}
		<-got[ns]
		i++
	}
	b.StopTimer()
	cancel()
	wg.Wait()
}
