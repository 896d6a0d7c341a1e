package cacher_test

import (
	"context"
	"strings"
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

// TestFactoryCustomRoot: a store whose KeyRoot is not the default one is
// served by a cache of that root when its storage comes from ForRoot, and
// refuses, rather than silently going past, a cache of another root.
func TestFactoryCustomRoot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mem := memory.New()
	defer mem.Close()
	notes := meta.GroupResource{Group: "example.com", Resource: "notes"}
	f := cacher.NewFactory(storage.Shared(mem), storage.WatchCacheConfig{Enabled: true})
	defer f.Close()
	const root = "/custom/notes"
	newStore := func(s storage.Interface) (*registry.Store[*note], error) {
		return registry.NewStore(registry.Options[*note]{
			Resource: notes, Kind: "Note", NamespaceScoped: true, StorageVersion: "v1",
			Strategy: registry.DefaultStrategy[*note]{}, Storage: s, KeyRoot: root,
		})
	}

	defaultRoot, err := f.For(notes)
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	if _, err := newStore(defaultRoot); err == nil || !strings.Contains(err.Error(), "storage.ForRoot") {
		t.Fatalf("NewStore with KeyRoot %q over the cache of %q: %v; want an error naming storage.ForRoot", root, defaultRoot.(*cacher.Cacher).Prefix(), err)
	}

	s, err := storage.ForRoot(f, notes, root)
	if err != nil {
		t.Fatalf("ForRoot: %v", err)
	}
	c, ok := s.(*cacher.Cacher)
	if !ok || c.KeyRoot() != root {
		t.Fatalf("ForRoot(%v, %q) = %T; want a Cacher of %s", notes, root, s, root)
	}
	if again, _ := storage.ForRoot(f, notes, root); again != s {
		t.Fatal("a second ForRoot made another cache")
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	store, err := newStore(s)
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	if _, err := store.Create(ctx, "ns", &note{ObjectMeta: meta.ObjectMeta{Name: "a"}}, registry.WriteOptions{}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if _, err := mem.Get(ctx, root+"/ns/a", storage.GetOptions{}); err != nil {
		t.Fatalf("the object is not under the custom root: %v", err)
	}
	if l, err := store.List(ctx, "ns", meta.ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Fatalf("List: %v, %v", l, err)
	}
	if _, _, err := store.Get(ctx, "ns", "a", meta.GetOptions{}); err != nil {
		t.Fatalf("Get: %v", err)
	}
	if n := c.Delegated(); n != 0 {
		t.Fatalf("%d of the store's reads went past the cache to the backend", n)
	}
}
