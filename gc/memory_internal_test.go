package gc

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage/memory"
)

// TestMemoryPerObject: what the collector keeps for each object it follows
// once its informer has listed them and its queue is drained: nothing in
// the stored value's memo (the collector reads the stored bytes, it does
// not have the object's JSON made and kept), no queue left at its peak
// size, and for an object with owners its node and the informer's store
// entry. The objects have labels, annotations and a uid as the registry
// makes them. An object without owners (the load benchmark's Flunders)
// costs nothing: the collector reads owners live, and keeps only the
// nodes of dependents and objects being deleted (~200 bytes each before,
// ~280 with the uid and resourceVersion as strings, ~1,000 before nodes).
// A dependent keeps ~520 bytes with its one owner reference and its entry
// in the index by owner (~1,800 when reading it live kept its decoded
// object in its memo).
func TestMemoryPerObject(t *testing.T) {
	for _, tc := range []struct {
		name   string
		owners []meta.OwnerReference
		kept   int     // objects the informer stores
		limit  float64 // bytes per object
	}{
		{"no owners", nil, 0, 30},
		{"one owner", []meta.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "0f8fad5b-d9cb-469f-a165-70867728950e"}}, 4000, 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 4000
			mem := memory.New(memory.WithCompactionInterval(0))
			t.Cleanup(func() { _ = mem.Close() })
			store := registry.MustNewStore(registry.Options[*meta.PartialObjectMetadata]{
				Resource: meta.GroupResource{Group: "example.com", Resource: "things"}, Kind: "Thing", NamespaceScoped: true,
				StorageVersion: "v1", Strategy: registry.DefaultStrategy[*meta.PartialObjectMetadata]{}, Storage: mem,
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for i := range n {
				_, err := store.Create(ctx, "default", &meta.PartialObjectMetadata{ObjectMeta: meta.ObjectMeta{
					Name:            fmt.Sprintf("thing-%05d", i),
					Labels:          map[string]string{"app": "bench", "index": fmt.Sprint(i)},
					Annotations:     map[string]string{"note": "an annotation the collector never reads"},
					OwnerReferences: tc.owners,
				}}, registry.WriteOptions{})
				if err != nil {
					t.Fatal(err)
				}
			}
			c := New(Config{Resources: []registry.Resource{registry.Serve(store)}, Logger: slog.New(slog.DiscardHandler)})
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			done := make(chan struct{})
			go func() { defer close(done); c.Run(ctx) }()
			defer func() { cancel(); <-done }()
			deadline := time.Now().Add(60 * time.Second)
			for {
				ks := c.kinds()
				c.mu.Lock()
				queued := c.queue.len()
				c.mu.Unlock()
				if len(ks) == 1 && ks[0].inf.HasSynced() && len(ks[0].inf.List()) == tc.kept && queued == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the collector did not list %d objects, keep %d and drain its queue in time", n, tc.kept)
				}
				time.Sleep(20 * time.Millisecond)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			perObject := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
			t.Logf("the collector keeps %.0f bytes per object", perObject)
			if perObject > tc.limit {
				t.Errorf("the collector keeps %.0f bytes per object, want at most %.0f", perObject, tc.limit)
			}
		})
	}
}
