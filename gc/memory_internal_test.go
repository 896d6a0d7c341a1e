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
// once its informer has listed them and its queue is drained: the node, the
// informer's store entry, nothing in the stored value's memo (the collector
// reads the stored bytes, it does not have the object's JSON made and kept)
// and no queue left at its peak size. The objects have labels, annotations
// and a uid as the registry makes them, and no owners, as the load
// benchmark's Flunders; it keeps ~300 bytes each since the collector keeps
// nodes (~1,000 before).
func TestMemoryPerObject(t *testing.T) {
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
			Name:        fmt.Sprintf("thing-%05d", i),
			Labels:      map[string]string{"app": "bench", "index": fmt.Sprint(i)},
			Annotations: map[string]string{"note": "an annotation the collector never reads"},
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
		if len(ks) == 1 && ks[0].inf.HasSynced() && len(ks[0].inf.List()) == n && queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector did not list %d objects and drain its queue in time", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perObject := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
	t.Logf("the collector keeps %.0f bytes per object", perObject)
	if perObject > 400 {
		t.Errorf("the collector keeps %.0f bytes per object, want at most 400", perObject)
	}
}
