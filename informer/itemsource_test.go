package informer_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage/storagetest"
)

// TestItemSourceConvertsInTheInformer: an informer over an ItemSource
// reads the resource's watch and converts the items in its own goroutine,
// with no goroutine of registry.ConvertWatch or of the registry's watch
// parked per watch (the garbage collector has an informer per resource),
// and is told of changes and of items it cannot convert as through the
// source's Watch.
func TestItemSourceConvertsInTheInformer(t *testing.T) {
	store, _ := newStore(t)
	res := registry.Serve(store)
	convert := func(it registry.Item) (*note, error) {
		obj, err := it.Object()
		if err != nil {
			return nil, err
		}
		n := obj.(*note)
		if n.Text == "bad" {
			return nil, errors.New("a bad note")
		}
		return n, nil
	}
	create(t, store, "ns", "a", "one")
	rec := &recorder{}
	inf := informer.New(informer.Config[*note]{
		Source: informer.ItemSource(func() registry.Resource { return res }, convert), Handlers: rec.handlers(),
		MinBackoff: time.Millisecond, Name: "notes",
	})
	run(t, inf)
	create(t, store, "ns", "b", "two")
	rec.waitFor(t, "add ns/a one", "add ns/b two")
	for _, fn := range []string{"registry.ConvertWatch", "registry.watchStore["} {
		if n := goroutinesIn(fn); n != 0 {
			t.Errorf("%d goroutines of %s for one informer, want 0", n, fn)
		}
	}
	// An item it cannot convert ends the watch; the informer lists again
	// and keeps failing on it, but the watch it ended is read to its end.
	create(t, store, "ns", "c", "bad")
	time.Sleep(50 * time.Millisecond)
	if n := goroutinesIn("registry.ConvertWatch"); n != 0 {
		t.Errorf("%d goroutines of registry.ConvertWatch after a failed conversion, want 0", n)
	}
}

// TestStoreReadInTheInformer: an informer over a registry.Store reads its
// watch in its own goroutine (Store.WatchSeq), with no goroutine of the
// registry's watch parked; over a type embedding a Store, through that
// type's Watch.
func TestStoreReadInTheInformer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wrapped bool
		want    int
	}{
		{"the store", false, 0},
		{"a type embedding it", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := newStore(t)
			var src informer.Source[*note] = store
			if tc.wrapped {
				src = &source{Store: store}
			}
			rec := &recorder{}
			inf := informer.New(informer.Config[*note]{Source: src, Handlers: rec.handlers(), Name: "notes"})
			run(t, inf)
			create(t, store, "ns", "a", "one")
			rec.waitFor(t, "add ns/a one")
			if n := goroutinesIn("registry.watchStore["); n != tc.want {
				t.Errorf("%d goroutines of registry.watchStore for one informer, want %d", n, tc.want)
			}
		})
	}
}

// goroutinesIn counts the goroutines with fn in their stacks.
func goroutinesIn(fn string) int {
	return storagetest.Goroutines(func(g string) bool { return strings.Contains(g, fn) })
}
