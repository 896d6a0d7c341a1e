package cacher_test

import (
	"context"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/cacher"
	"github.com/apikit-dev/apikit/storage/memory"
)

type note struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Text            string `json:"text,omitempty"`
}

func TestFactory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mem := memory.New()
	defer mem.Close()
	notes := meta.GroupResource{Group: "example.com", Resource: "notes"}
	other := meta.GroupResource{Group: "example.com", Resource: "others"}
	off := meta.GroupResource{Group: "example.com", Resource: "uncached"}
	f := cacher.NewFactory(storage.Shared(mem), storage.WatchCacheConfig{
		Enabled:     true,
		DefaultSize: 0,
		Sizes:       map[meta.GroupResource]int{off: 0, other: 10},
	})

	s, err := f.For(notes)
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	c, ok := s.(*cacher.Cacher)
	if !ok || c.Prefix() != "/example.com/notes/" {
		t.Fatalf("For(%v) = %T; want a Cacher of /example.com/notes/", notes, s)
	}
	if again, _ := f.For(notes); again != s {
		t.Fatal("a second For made another cache")
	}
	if s, _ := f.For(off); s != storage.Interface(mem) {
		t.Fatalf("For(%v), sized 0, = %T; want the backend", off, s)
	}
	if s, _ := f.For(meta.GroupResource{Group: "example.com"}); s != storage.Interface(mem) {
		t.Fatalf("For a whole group = %T; want the backend", s)
	}
	if s, _ := cacher.NewFactory(storage.Shared(mem), storage.WatchCacheConfig{}).For(notes); s != storage.Interface(mem) {
		t.Fatalf("For with the watch cache off = %T; want the backend", s)
	}

	// A registry store with the default key layout is served by its cache.
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	store, err := registry.NewStore(registry.Options[*note]{
		Resource: notes, Kind: "Note", NamespaceScoped: true, StorageVersion: "v1",
		Strategy: registry.DefaultStrategy[*note]{}, Storage: s,
	})
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	n := &note{ObjectMeta: meta.ObjectMeta{Name: "a"}, Text: "hello"}
	if _, err := store.Create(ctx, "ns", n, registry.WriteOptions{}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	l, err := store.List(ctx, "ns", meta.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("List: %v, %v", l, err)
	}
	_, memo, err := store.Get(ctx, "ns", "a", meta.GetOptions{})
	if err != nil || memo == nil || l.Items[0].Memo != memo {
		t.Fatalf("Get: memo %p, %v; List's %p", memo, err, l.Items[0].Memo)
	}
	if n := c.Delegated(); n != 0 {
		t.Fatalf("%d of the store's reads went to the backend", n)
	}

	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := c.Get(ctx, "/example.com/notes/ns/a", storage.GetOptions{}); err == nil {
		t.Fatal("the cache still serves after the factory closed")
	}
	if _, err := f.For(other); err == nil {
		t.Fatal("For after Close made a cache")
	}
	if _, err := mem.Get(ctx, "/example.com/notes/ns/a", storage.GetOptions{}); err != nil {
		t.Fatalf("the backend is closed too: %v", err)
	}
}

func TestKeyRoot(t *testing.T) {
	for _, tc := range []struct {
		r    meta.GroupResource
		want string
	}{
		{meta.GroupResource{Group: "wardle.example.com", Resource: "flunders"}, "/wardle.example.com/flunders/"},
		{meta.GroupResource{Resource: "pods"}, "/pods/"},
	} {
		if got := cacher.KeyRoot(tc.r); got != tc.want {
			t.Errorf("KeyRoot(%v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}
