package informer_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/registry"
)

// TestItemSourceConvertsInTheInformer: an informer over an ItemSource
// converts the items in its own goroutine, with no goroutine of
// registry.ConvertWatch parked per watch (the garbage collector has an
// informer per resource), and is told of changes and of items it cannot
// convert as through the source's Watch.
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
	if n := goroutinesIn("registry.ConvertWatch"); n != 0 {
		t.Errorf("%d goroutines of registry.ConvertWatch for one informer, want 0", n)
	}
	// An item it cannot convert ends the watch; the informer lists again
	// and keeps failing on it, but the watch it ended is read to its end.
	create(t, store, "ns", "c", "bad")
	time.Sleep(50 * time.Millisecond)
	if n := goroutinesIn("registry.ConvertWatch"); n != 0 {
		t.Errorf("%d goroutines of registry.ConvertWatch after a failed conversion, want 0", n)
	}
}

// goroutinesIn counts the goroutines with fn in their stacks.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			count++
		}
	}
	return count
}
