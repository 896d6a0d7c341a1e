package cacher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
	"github.com/apikit-dev/apikit/storage/storagetest"
)

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newMemory() *memory.Store {
	return memory.New(memory.WithBookmarkInterval(testBookmarkInterval), memory.WithMaxRevisionWait(testMaxRevisionWait))
}

func val(name string, n int, labels ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"metadata":{"name":%q,"labels":{`, name)
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%q", labels[i], labels[i+1])
	}
	fmt.Fprintf(&b, `}},"n":%d}`, n)
	return []byte(b.String())
}

// eqSelector is a one-label equality selector.
type eqSelector struct{ key, value string }

func (s eqSelector) Matches(set meta.Set) bool { return set[s.key] == s.value }
func (s eqSelector) Empty() bool               { return false }
func (s eqSelector) String() string            { return s.key + "=" + s.value }
func (s eqSelector) RequiresExactMatch(key string) (string, bool) {
	return s.value, key == s.key
}

// labelOf reads the label of a test value the crude way: the values are
// the tests' own.
func labelOf(value []byte, key string) string {
	i := bytes.Index(value, []byte(`"`+key+`":"`))
	if i < 0 {
		return ""
	}
	rest := value[i+len(key)+4:]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

// countingPredicate selects color=want and counts how often it decodes.
func countingPredicate(want string, decodes *atomic.Int64) storage.Predicate {
	return storage.Predicate{
		Label: eqSelector{"color", want},
		GetAttrs: func(value []byte) (meta.Set, meta.Set, error) {
			decodes.Add(1)
			return meta.Set{"color": labelOf(value, "color")}, nil, nil
		},
	}
}

func mustCreate(t testing.TB, ctx context.Context, s storage.Interface, key string, v []byte) int64 {
	t.Helper()
	rev, err := s.Create(ctx, key, v)
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	return rev
}

func mustPut(t testing.TB, ctx context.Context, s storage.Interface, key string, v []byte) storage.KeyValue {
	t.Helper()
	kv, err := s.GuaranteedUpdate(ctx, key, storage.UpdateOptions{IgnoreNotFound: true},
		func(storage.KeyValue) ([]byte, error) { return v, nil })
	if err != nil {
		t.Fatalf("GuaranteedUpdate(%q): %v", key, err)
	}
	return kv
}

// collect reads n events, skipping bookmarks.
func collect(w storage.Watcher, n int) ([]storage.Event, error) {
	evs := make([]storage.Event, 0, n)
	timeout := time.After(30 * time.Second)
	for len(evs) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return evs, fmt.Errorf("watch closed after %d of %d events", len(evs), n)
			}
			if ev.Type == storage.Bookmark {
				continue
			}
			if ev.Type == storage.ErrorEvent {
				return evs, fmt.Errorf("event %d: error %w", len(evs), ev.Err)
			}
			evs = append(evs, ev)
		case <-timeout:
			return evs, fmt.Errorf("got %d of %d events in 30s", len(evs), n)
		}
	}
	return evs, nil
}

// drain reads n events or fails.
func drain(t testing.TB, w storage.Watcher, n int) []storage.Event {
	t.Helper()
	evs, err := collect(w, n)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// spy is a backend that records what the cacher asks of it and can end
// the cacher's backend watch on demand.
type spy struct {
	storage.Interface
	suggestions chan storage.KeyValue
	// refuse makes Watch fail.
	refuse  atomic.Bool
	mu      sync.Mutex
	watches []storage.Watcher
}

func (s *spy) GuaranteedUpdate(ctx context.Context, key string, opts storage.UpdateOptions, try storage.UpdateFunc) (storage.KeyValue, error) {
	if s.suggestions != nil {
		s.suggestions <- opts.Suggestion
	}
	return s.Interface.GuaranteedUpdate(ctx, key, opts, try)
}

func (s *spy) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.Watcher, error) {
	if s.refuse.Load() {
		return nil, storage.NewUnavailable(errors.New("refused"))
	}
	w, err := s.Interface.Watch(ctx, prefix, opts)
	if err == nil {
		s.mu.Lock()
		s.watches = append(s.watches, w)
		s.mu.Unlock()
	}
	return w, err
}

// breakWatches ends every backend watch so far.
func (s *spy) breakWatches() {
	s.mu.Lock()
	ws := s.watches
	s.watches = nil
	s.mu.Unlock()
	for _, w := range ws {
		w.Stop()
	}
}

// TestConsistencyUnderConcurrentWrites writes from several goroutines
// while others read through the cache, and checks every read against what
// the writers know: a consistent read sees every write that returned
// before it started, an Exact list equals the backend's at that revision,
// and a watch sees every change once, in order, ending in the backend's
// state.
func TestConsistencyUnderConcurrentWrites(t *testing.T) {
	ctx := testContext(t)
	backend := newMemory()
	c := testCacher(t, backend, WithCapacity(5000))
	defer c.Close()
	w, err := c.Watch(ctx, "/c/", storage.WatchOptions{Revision: c.h.Revision()})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()
	// The watch's consumer keeps up, as a client does: one that stops
	// reading would be closed once it stalled far behind.
	want := make(chan int, 1)
	consumed := make(chan []storage.Event, 1)
	consumeErr := make(chan error, 1)
	go func() {
		var evs []storage.Event
		for n := -1; n < 0 || len(evs) < n; {
			select {
			case n = <-want:
			case ev, ok := <-w.ResultChan():
				switch {
				case !ok:
					consumeErr <- fmt.Errorf("watch closed after %d events", len(evs))
					return
				case ev.Type == storage.ErrorEvent:
					consumeErr <- fmt.Errorf("event %d: error %w", len(evs), ev.Err)
					return
				case ev.Type != storage.Bookmark:
					evs = append(evs, ev)
				}
			}
		}
		consumed <- evs
	}()

	const writers, perWriter, keys = 4, 1000, 10
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	var writes atomic.Int64
	for wr := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(wr), 1))
			for i := range perWriter {
				// Each writer has keys of its own, so that it knows what a
				// read of them must return.
				key := fmt.Sprintf("/c/w%d-k%02d", wr, rng.IntN(keys))
				var rev int64
				var want []byte
				if rng.IntN(5) == 0 {
					kv, err := c.Delete(ctx, key, storage.DeleteOptions{})
					if errors.Is(err, storage.ErrNotFound) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					rev = kv.Revision
				} else {
					want = val(key, wr*perWriter+i)
					kv, err := c.GuaranteedUpdate(ctx, key, storage.UpdateOptions{IgnoreNotFound: true},
						func(storage.KeyValue) ([]byte, error) { return want, nil })
					if err != nil {
						errs <- err
						return
					}
					rev = kv.Revision
				}
				writes.Add(1)
				// Read your write: a consistent read started now sees it.
				got, err := c.Get(ctx, key, storage.GetOptions{IgnoreNotFound: true})
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got.Value, want) || (want != nil && got.Revision != rev) {
					errs <- fmt.Errorf("Get(%q) after a write of %s at %d returned %s at %d", key, want, rev, got.Value, got.Revision)
					return
				}
				l, err := c.List(ctx, "/c/", storage.ListOptions{})
				if err != nil {
					errs <- err
					return
				}
				if l.Revision < rev {
					errs <- fmt.Errorf("List after a write at %d is at revision %d", rev, l.Revision)
					return
				}
			}
		})
	}
	// A reader compares Exact lists from the cache, paged, with one list
	// of the backend at the same revision.
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	var compared, items atomic.Int64
	rwg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			rev := c.h.Revision()
			var all []storage.KeyValue
			opts := storage.ListOptions{Revision: rev, Match: storage.MatchExact, Limit: 7}
			for {
				l, err := c.List(ctx, "/c/", opts)
				if err != nil {
					errs <- fmt.Errorf("paged List at %d: %w", rev, err)
					return
				}
				all = append(all, l.Items...)
				if l.Continue == "" {
					break
				}
				opts = storage.ListOptions{Continue: l.Continue, Limit: 7}
			}
			want, err := backend.List(ctx, "/c/", storage.ListOptions{Revision: rev, Match: storage.MatchExact})
			if err != nil {
				errs <- fmt.Errorf("backend List at %d: %w", rev, err)
				return
			}
			if len(all) != len(want.Items) {
				errs <- fmt.Errorf("at %d the cache's pages have %d items, the backend %d", rev, len(all), len(want.Items))
				return
			}
			for i := range all {
				if all[i].Key != want.Items[i].Key || all[i].Revision != want.Items[i].Revision || !bytes.Equal(all[i].Value, want.Items[i].Value) {
					errs <- fmt.Errorf("at %d item %d: cache %s@%d, backend %s@%d", rev, i, all[i].Key, all[i].Revision, want.Items[i].Key, want.Items[i].Revision)
					return
				}
			}
			compared.Add(1)
			items.Add(int64(len(all)))
		}
	})
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if compared.Load() == 0 {
		t.Fatal("no paged list was compared")
	}

	// The watch saw every write, once, in order; applying its events
	// gives the backend's final state.
	want <- int(writes.Load())
	var evs []storage.Event
	select {
	case evs = <-consumed:
	case err := <-consumeErr:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatalf("the watch did not deliver all %d events in 30s", writes.Load())
	}
	state := map[string]storage.Event{}
	var last int64
	for _, ev := range evs {
		if ev.Revision <= last {
			t.Fatalf("event at %d after %d", ev.Revision, last)
		}
		last = ev.Revision
		if ev.Type == storage.Deleted {
			delete(state, ev.Key)
		} else {
			state[ev.Key] = ev
		}
	}
	final, err := backend.List(ctx, "/c/", storage.ListOptions{})
	if err != nil {
		t.Fatalf("backend List: %v", err)
	}
	if len(final.Items) != len(state) {
		t.Fatalf("the watch ends with %d objects, the backend has %d", len(state), len(final.Items))
	}
	for _, kv := range final.Items {
		if ev := state[kv.Key]; ev.Revision != kv.Revision || !bytes.Equal(ev.Value, kv.Value) {
			t.Fatalf("%s: the watch ends at %d, the backend at %d", kv.Key, ev.Revision, kv.Revision)
		}
	}
	if n := c.delegated.Load(); n != 0 {
		t.Fatalf("%d reads went to the backend", n)
	}
	t.Logf("%d writes, %d paged lists (%d items) compared", writes.Load(), compared.Load(), items.Load())
}

// TestSlowWatcher checks that a watcher whose consumer stops reading holds
// up neither the writes nor the other watchers, and is closed without an
// error (as kube's watch cache closes it) once it fell out of the window.
func TestSlowWatcher(t *testing.T) {
	ctx := testContext(t)
	const window = 50
	c := testCacher(t, newMemory(), WithCapacity(window))
	defer c.Close()
	from := c.h.Revision()
	slow, err := c.Watch(ctx, "/s/", storage.WatchOptions{Revision: from})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer slow.Stop()
	fast, err := c.Watch(ctx, "/s/", storage.WatchOptions{Revision: from})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer fast.Stop()

	const writes = 20 * window
	start := time.Now()
	for i := range writes {
		mustPut(t, ctx, c, fmt.Sprintf("/s/k%d", i%10), val("k", i))
		// The fast watcher keeps up; the slow one reads nothing.
		if ev := drain(t, fast, 1)[0]; !bytes.Equal(ev.Value, val("k", i)) {
			t.Fatalf("fast watcher: event %d is %s", i, ev.Value)
		}
	}
	t.Logf("%d writes, each delivered to the fast watcher, took %v", writes, time.Since(start))
	// The slow one gets what its buffer held, then the end of the watch.
	var n int
	for ev := range slow.ResultChan() {
		if ev.Type == storage.ErrorEvent {
			t.Fatalf("slow watcher ended after %d events with %v; want it closed without an error", n, ev.Err)
		}
		if !bytes.Equal(ev.Value, val("k", n)) {
			t.Fatalf("slow watcher: event %d is %s", n, ev.Value)
		}
		n++
	}
	if n >= writes {
		t.Fatalf("slow watcher got all %d events; want it closed when it fell out of the window", n)
	}
	t.Logf("slow watcher got %d events, then was closed", n)
}

// TestManyWatchers fans changes out to thousands of watchers, some with a
// selector, and checks that each gets exactly its events and that the
// selector decodes each value once, not once per watcher.
func TestManyWatchers(t *testing.T) {
	ctx := testContext(t)
	c := testCacher(t, newMemory())
	defer c.Close()
	const watchers, writes = 2000, 40
	var decodes atomic.Int64
	from := c.h.Revision()
	ws := make([]storage.Watcher, watchers)
	for i := range ws {
		opts := storage.WatchOptions{Revision: from}
		if i%2 == 1 {
			opts.Predicate = countingPredicate("red", &decodes)
		}
		w, err := c.Watch(ctx, "/m/", opts)
		if err != nil {
			t.Fatalf("Watch %d: %v", i, err)
		}
		defer w.Stop()
		ws[i] = w
	}
	for i := range writes {
		color := "blue"
		if i%4 == 0 {
			color = "red"
		}
		mustCreate(t, ctx, c, fmt.Sprintf("/m/k%03d", i), val("k", i, "color", color))
	}
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			want := writes
			if i%2 == 1 {
				want = writes / 4
			}
			evs, err := collect(w, want)
			if err != nil {
				t.Errorf("watcher %d: %v", i, err)
				return
			}
			for j, ev := range evs {
				k := j
				if i%2 == 1 {
					k = 4 * j
				}
				if ev.Type != storage.Added || ev.Key != fmt.Sprintf("/m/k%03d", k) {
					t.Errorf("watcher %d event %d: %s %s", i, j, ev.Type, ev.Key)
					return
				}
			}
		})
	}
	wg.Wait()
	if d := decodes.Load(); d > 2*writes {
		t.Fatalf("%d attribute decodes for %d values; want each decoded about once", d, writes)
	}
}

// TestWindowBoundsMemory checks that history is dropped with the window:
// what the cache holds is the current objects plus the changes the window
// keeps, however many writes went by.
func TestWindowBoundsMemory(t *testing.T) {
	ctx := testContext(t)
	t.Run("fixed capacity", func(t *testing.T) {
		const window, keys = 100, 10
		c := testCacher(t, newMemory(), WithCapacity(window))
		defer c.Close()
		for i := range 5000 {
			key := fmt.Sprintf("/w/k%d", i%keys)
			if i%7 == 6 {
				if _, err := c.Delete(ctx, key, storage.DeleteOptions{}); err != nil && !errors.Is(err, storage.ErrNotFound) {
					t.Fatalf("Delete: %v", err)
				}
				continue
			}
			mustPut(t, ctx, c, key, val("k", i))
		}
		// Short-lived keys vanish from the index once their changes leave
		// the window.
		for i := range 500 {
			key := fmt.Sprintf("/w/tmp%d", i)
			mustCreate(t, ctx, c, key, val("t", i))
			if _, err := c.Delete(ctx, key, storage.DeleteOptions{}); err != nil {
				t.Fatalf("Delete: %v", err)
			}
		}
		mustCreate(t, ctx, c, "/w/last", val("last", 0))
		if _, err := c.Get(ctx, "/w/last", storage.GetOptions{}); err != nil {
			t.Fatalf("Get: %v", err)
		}
		events, versions, records := c.held()
		if events > window {
			t.Fatalf("the window holds %d changes; capacity %d", events, window)
		}
		if versions > window+keys+1 || records > window+keys+1 {
			t.Fatalf("%d versions of %d keys held for a window of %d and %d live keys", versions, records, window, keys+1)
		}
	})
	t.Run("dynamic window ages out", func(t *testing.T) {
		c := testCacher(t, newMemory())
		c.h.Lock()
		c.fresh = 100 * time.Millisecond
		c.h.Unlock()
		defer c.Close()
		for i := range 3 * minDynamicCapacity {
			mustPut(t, ctx, c, "/w/k", val("k", i))
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			events, versions, _ := c.held()
			if events == minDynamicCapacity && versions <= minDynamicCapacity+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the window still holds %d changes (%d versions) after their freshness passed; want %d", events, versions, minDynamicCapacity)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// held reports how many changes, versions and keys the cache holds.
func (c *Cacher) held() (events, versions, records int) { return c.h.Stats() }

// cacherGoroutines counts goroutines running this package's code or its
// history's (watchers, the bookmark ticker).
func cacherGoroutines() int {
	return storagetest.Goroutines(func(g string) bool {
		ours := strings.Contains(g, "apikit/storage/cacher.(*") || strings.Contains(g, "apikit/storage/internal/history.(*")
		return ours && !strings.Contains(g, "testing.tRunner")
	})
}

// TestCloseStopsEverything checks that Close ends the cacher's goroutines,
// its watches (closing their channels) and reads that wait.
func TestCloseStopsEverything(t *testing.T) {
	ctx := testContext(t)
	base := cacherGoroutines()
	backend := newMemory()
	defer backend.Close()
	c := New(backend, "/x/", WithBookmarkInterval(testBookmarkInterval))
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	var ws []storage.Watcher
	for i := range 50 {
		opts := storage.WatchOptions{Bookmarks: i%2 == 0}
		if i%3 == 0 {
			opts.SendInitialEvents = true
		}
		w, err := c.Watch(ctx, "/x/", opts)
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		ws = append(ws, w)
	}
	for i := range 100 {
		mustPut(t, ctx, c, fmt.Sprintf("/x/k%d", i%5), val("k", i)) // nobody reads: buffers fill
	}
	// A read of a future revision waits inside the cache.
	cur, err := backend.CurrentRevision(ctx)
	if err != nil {
		t.Fatalf("CurrentRevision: %v", err)
	}
	waited := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, "/x/k0", storage.GetOptions{MinRevision: cur + 100})
		waited <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if n := cacherGoroutines(); n < base+50 {
		t.Fatalf("%d goroutines in the cacher with 50 watches; %d before", n, base)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, w := range ws {
		select {
		case _, ok := <-w.ResultChan():
			for ok {
				_, ok = <-w.ResultChan()
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("watch %d still open after Close", i)
		}
	}
	select {
	case err := <-waited:
		if !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("a read waiting at Close returned %v; want ErrUnavailable", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a read waiting at Close still waits")
	}
	deadline := time.Now().Add(5 * time.Second)
	for cacherGoroutines() > base {
		if time.Now().After(deadline) {
			t.Fatalf("%d cacher goroutines left after Close; %d before", cacherGoroutines(), base)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.Get(ctx, "/x/k0", storage.GetOptions{}); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Get after Close: %v; want ErrUnavailable", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestProgressWithoutChanges checks that a consistent read is served from
// the cache promptly when the backend's revision moved through writes
// outside the cache's prefix: the cache asks for progress rather than
// waiting for a change of its own or giving up.
func TestProgressWithoutChanges(t *testing.T) {
	ctx := testContext(t)
	backend := newMemory()
	defer backend.Close()
	c := New(backend, "/mine/", WithMaxRevisionWait(time.Minute), WithBookmarkInterval(time.Hour))
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	mustCreate(t, ctx, c, "/mine/a", val("a", 1))
	for i := range 20 {
		other := mustCreate(t, ctx, backend, fmt.Sprintf("/other/%d", i), val("o", i))
		start := time.Now()
		l, err := c.List(ctx, "/mine/", storage.ListOptions{})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if l.Revision < other {
			t.Fatalf("consistent List at %d; the backend was at %d before it", l.Revision, other)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("consistent List took %v", d)
		}
	}
	if n := c.delegated.Load(); n != 0 {
		t.Fatalf("%d reads went to the backend", n)
	}
}

// TestMemoPerVersion checks that every reader of one value shares one
// memo, and that a new value gets a new one.
func TestMemoPerVersion(t *testing.T) {
	ctx := testContext(t)
	c := testCacher(t, &spy{Interface: etcdLike{newMemory()}})
	defer c.Close()
	mustCreate(t, ctx, c, "/p/a", val("a", 1))
	g1, err := c.Get(ctx, "/p/a", storage.GetOptions{})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	g2, _ := c.Get(ctx, "/p/a", storage.GetOptions{})
	l, _ := c.List(ctx, "/p/", storage.ListOptions{})
	if g1.Memo == nil || g1.Memo != g2.Memo || len(l.Items) != 1 || l.Items[0].Memo != g1.Memo {
		t.Fatalf("memos of one value: Get %p, Get %p, List %v; want one memo", g1.Memo, g2.Memo, l.Items)
	}
	mustPut(t, ctx, c, "/p/a", val("a", 2))
	g3, _ := c.Get(ctx, "/p/a", storage.GetOptions{})
	if g3.Memo == nil || g3.Memo == g1.Memo {
		t.Fatalf("the new value shares the old value's memo")
	}
	// The old value keeps its memo for reads at its revision.
	old, err := c.List(ctx, "/p/", storage.ListOptions{Revision: g1.Revision, Match: storage.MatchExact})
	if err != nil || len(old.Items) != 1 || old.Items[0].Memo != g1.Memo {
		t.Fatalf("List at the old revision: %v, %v; want the old value with its memo", old.Items, err)
	}
}

// etcdLike hides the memos of a memory store, as etcd3 has none, so that
// the cache must make its own.
type etcdLike struct{ *memory.Store }

func (s etcdLike) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.Watcher, error) {
	w, err := s.Store.Watch(ctx, prefix, opts)
	if err != nil {
		return nil, err
	}
	return &memoless{Watcher: w, out: stripMemos(ctx, w.ResultChan())}, nil
}

type memoless struct {
	storage.Watcher
	out <-chan storage.Event
}

func (w *memoless) ResultChan() <-chan storage.Event { return w.out }

func (w *memoless) RequestProgress(ctx context.Context) error {
	return w.Watcher.(storage.ProgressRequester).RequestProgress(ctx)
}

func stripMemos(ctx context.Context, in <-chan storage.Event) <-chan storage.Event {
	out := make(chan storage.Event)
	go func() {
		defer close(out)
		for ev := range in {
			ev.Memo = nil
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// TestUpdateSuggestsCachedValue checks that GuaranteedUpdate starts from
// the cached value, and leaves a caller's own suggestion alone.
func TestUpdateSuggestsCachedValue(t *testing.T) {
	ctx := testContext(t)
	sp := &spy{Interface: newMemory(), suggestions: make(chan storage.KeyValue, 10)}
	c := testCacher(t, sp)
	defer c.Close()
	kv := mustPut(t, ctx, c, "/u/a", val("a", 1))
	<-sp.suggestions
	if _, err := c.Get(ctx, "/u/a", storage.GetOptions{}); err != nil { // the cache has it now
		t.Fatalf("Get: %v", err)
	}
	mustPut(t, ctx, c, "/u/a", val("a", 2))
	if sug := <-sp.suggestions; sug.Key != "/u/a" || sug.Revision != kv.Revision || !bytes.Equal(sug.Value, val("a", 1)) || sug.Memo == nil {
		t.Fatalf("suggestion %+v; want the cached value at %d", sug, kv.Revision)
	}
	own := storage.KeyValue{Key: "/u/a", Value: []byte("{}"), Revision: 1}
	if _, err := c.GuaranteedUpdate(ctx, "/u/a", storage.UpdateOptions{Suggestion: own},
		func(storage.KeyValue) ([]byte, error) { return val("a", 3), nil }); err != nil {
		t.Fatalf("GuaranteedUpdate: %v", err)
	}
	if sug := <-sp.suggestions; sug.Revision != 1 {
		t.Fatalf("the caller's suggestion was replaced by %+v", sug)
	}
}

// TestBackendWatchLoss checks that the cache resumes its backend watch
// when it ends, and lists again (ending its watches with ErrExpired) when
// the backend compacted the revision it would resume from.
func TestBackendWatchLoss(t *testing.T) {
	ctx := testContext(t)
	mem := newMemory()
	sp := &spy{Interface: mem}
	c := testCacher(t, sp)
	defer c.Close()
	ra := mustCreate(t, ctx, c, "/r/a", val("a", 1))
	w, err := c.Watch(ctx, "/r/", storage.WatchOptions{Revision: ra})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()

	// Resumed: the watch goes on.
	sp.breakWatches()
	r := mustCreate(t, ctx, c, "/r/b", val("b", 1))
	if ev := drain(t, w, 1)[0]; ev.Key != "/r/b" || ev.Revision != r {
		t.Fatalf("after a resumed backend watch got %s %s@%d", ev.Type, ev.Key, ev.Revision)
	}

	// Lost: while the cache has no backend watch, history goes.
	sp.refuse.Store(true)
	sp.breakWatches()
	mustCreate(t, ctx, mem, "/r/c", val("c", 1))
	cur := mustCreate(t, ctx, mem, "/r/d", val("d", 1))
	if err := mem.Compact(cur); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	sp.refuse.Store(false)
	select {
	case ev := <-w.ResultChan():
		for ev.Type == storage.Added || ev.Type == storage.Bookmark {
			ev = <-w.ResultChan() // changes delivered before the loss was noticed
		}
		if ev.Type != storage.ErrorEvent || !errors.Is(ev.Err, storage.ErrExpired) {
			t.Fatalf("after the cache listed again the watch got %s %v; want ErrExpired", ev.Type, ev.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch did not end when the cache listed again")
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !c.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("the cache is not ready again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	l, err := c.List(ctx, "/r/", storage.ListOptions{})
	if err != nil || len(l.Items) != 4 {
		t.Fatalf("List after listing again: %d items, %v; want 4", len(l.Items), err)
	}
}

// slowWatch delays every event of the backend's watches, as a busy etcd
// or network would.
type slowWatch struct {
	*memory.Store
	delay time.Duration
}

func (s slowWatch) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.Watcher, error) {
	w, err := s.Store.Watch(ctx, prefix, opts)
	if err != nil {
		return nil, err
	}
	out := make(chan storage.Event)
	go func() {
		defer close(out)
		for ev := range w.ResultChan() {
			if ev.Type != storage.Bookmark {
				time.Sleep(s.delay)
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return &memoless{Watcher: w, out: out}, nil
}

// TestReadsOwnWrites checks that a read not older than some revision sees
// the writes made through the cache before it, even when the cache's watch
// delivers them late: as the backends, and a client's reasonable
// expectation of one server.
func TestReadsOwnWrites(t *testing.T) {
	ctx := testContext(t)
	c := testCacher(t, slowWatch{newMemory(), 50 * time.Millisecond})
	first := mustCreate(t, ctx, c, "/o/a", val("a", 1))
	for i := range 5 {
		key := fmt.Sprintf("/o/k%d", i)
		rev := mustCreate(t, ctx, c, key, val("k", i))
		kv, err := c.Get(ctx, key, storage.GetOptions{MinRevision: first})
		if err != nil || kv.Revision != rev {
			t.Fatalf("Get(%q) not older than %d after writing it at %d: %+v, %v", key, first, rev, kv, err)
		}
		l, err := c.List(ctx, "/o/", storage.ListOptions{Revision: first, Match: storage.MatchNotOlderThan})
		if err != nil || l.Revision < rev || len(l.Items) != i+2 {
			t.Fatalf("List not older than %d after a write at %d: revision %d, %d items, %v", first, rev, l.Revision, len(l.Items), err)
		}
	}
	if n := c.delegated.Load(); n != 0 {
		t.Fatalf("%d reads went to the backend", n)
	}
}

// TestNamespaceWatchers checks watchers of one namespace among many:
// changes elsewhere neither wake nor end them, however many leave the
// window, while one that misses changes of its own does end.
func TestNamespaceWatchers(t *testing.T) {
	ctx := testContext(t)
	const window = 20
	c := testCacher(t, newMemory(), WithCapacity(window))
	from := c.h.Revision()
	watch := func(prefix string) storage.Watcher {
		w, err := c.Watch(ctx, prefix, storage.WatchOptions{Revision: from})
		if err != nil {
			t.Fatalf("Watch(%q): %v", prefix, err)
		}
		t.Cleanup(w.Stop)
		return w
	}
	idle, slow := watch("/n/a/"), watch("/n/b/")
	groups := c.h.WakeGroups()
	if groups != 2 {
		t.Fatalf("%d wake groups for watchers of two prefixes", groups)
	}
	for i := range 10 * window {
		mustCreate(t, ctx, c, fmt.Sprintf("/n/c/k%03d", i), val("c", i))
	}
	ra := mustCreate(t, ctx, c, "/n/a/x", val("x", 1))
	if ev := drain(t, idle, 1)[0]; ev.Key != "/n/a/x" || ev.Revision != ra {
		t.Fatalf("the idle watcher got %s %s@%d", ev.Type, ev.Key, ev.Revision)
	}
	// The slow watcher reads nothing while its own changes pass through
	// the window.
	for i := range 3 * window {
		mustCreate(t, ctx, c, fmt.Sprintf("/n/b/k%03d", i), val("b", i))
	}
	ry := mustCreate(t, ctx, c, "/n/a/y", val("y", 1))
	if ev := drain(t, idle, 1)[0]; ev.Key != "/n/a/y" || ev.Revision != ry {
		t.Fatalf("the idle watcher got %s %s@%d", ev.Type, ev.Key, ev.Revision)
	}
	n := 0
	for ev := range slow.ResultChan() {
		if ev.Type == storage.ErrorEvent {
			t.Fatalf("the slow watcher ended after %d events with %v; want it closed without an error", n, ev.Err)
		}
		if ev.Key != fmt.Sprintf("/n/b/k%03d", n) {
			t.Fatalf("the slow watcher's event %d is %s", n, ev.Key)
		}
		n++
	}
	if n >= 3*window {
		t.Fatalf("the slow watcher got all %d of its events; want it closed when they left the window", n)
	}
}

// TestDeletedEventMemo checks that a delete reaches every watcher with one
// memo of its own: not the value's, whose derived forms carry the value's
// revision rather than the delete's.
func TestDeletedEventMemo(t *testing.T) {
	ctx := testContext(t)
	for _, tc := range []struct {
		name    string
		backend storage.Interface
	}{{"memory", newMemory()}, {"without memos", etcdLike{newMemory()}}} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCacher(t, tc.backend)
			from := c.h.Revision()
			var ws []storage.Watcher
			for range 3 {
				w, err := c.Watch(ctx, "/d/", storage.WatchOptions{Revision: from})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				ws = append(ws, w)
			}
			mustCreate(t, ctx, c, "/d/a", val("a", 1))
			del, err := c.Delete(ctx, "/d/a", storage.DeleteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var memo *storage.Memo
			for i, w := range ws {
				evs := drain(t, w, 2)
				added, deleted := evs[0], evs[1]
				if deleted.Type != storage.Deleted || deleted.Revision != del.Revision || !bytes.Equal(deleted.Value, val("a", 1)) {
					t.Fatalf("watcher %d: %s %s@%d", i, deleted.Type, deleted.Value, deleted.Revision)
				}
				if deleted.Memo == nil || deleted.Memo == added.Memo {
					t.Fatalf("watcher %d: the Deleted event's memo is %p, the value's %p", i, deleted.Memo, added.Memo)
				}
				if memo != nil && deleted.Memo != memo {
					t.Fatalf("watcher %d got another memo for the same delete", i)
				}
				memo = deleted.Memo
			}
		})
	}
}

// TestInitialEventsFromSnapshot checks that the initial events of a watch
// come from the state when it started: changes that push the window past
// that state while the consumer reads slowly do not fail them (kube's watch
// cache sends them from a snapshot too).
func TestInitialEventsFromSnapshot(t *testing.T) {
	ctx := testContext(t)
	const window, objects = 10, 600
	c := testCacher(t, newMemory(), WithCapacity(window))
	for i := range objects {
		mustCreate(t, ctx, c, fmt.Sprintf("/i/k%04d", i), val("k", i))
	}
	for round, tc := range []struct {
		name string
		opts storage.WatchOptions
	}{
		{"SendInitialEvents", storage.WatchOptions{SendInitialEvents: true, Bookmarks: true}},
		{"from revision zero", storage.WatchOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := caughtUp(t, c)
			w, err := c.Watch(ctx, "/i/", tc.opts)
			if err != nil {
				t.Fatalf("Watch: %v", err)
			}
			defer w.Stop()
			// The consumer reads one event, then the window moves on by
			// many times its size.
			first := drain(t, w, 1)[0]
			for i := range 5 * window {
				mustPut(t, ctx, c, fmt.Sprintf("/i/k%04d", i), val("k", (round+1)*objects+i))
			}
			caughtUp(t, c)
			c.h.RLock()
			floor, _ := c.h.FloorsLocked()
			c.h.RUnlock()
			if floor <= start {
				t.Fatalf("the window's floor %d did not pass the watch's start %d", floor, start)
			}
			got := map[string]bool{first.Key: true}
			for len(got) < objects {
				ev, ok := <-w.ResultChan()
				switch {
				case !ok:
					t.Fatalf("the watch closed after %d of %d initial events", len(got), objects)
				case ev.Type == storage.ErrorEvent:
					t.Fatalf("initial event %d: %v", len(got), ev.Err)
				case ev.Type != storage.Added || ev.Revision > start:
					t.Fatalf("initial event %d: %s %s@%d; want the state at %d", len(got), ev.Type, ev.Key, ev.Revision, start)
				}
				got[ev.Key] = true
			}
			if tc.opts.SendInitialEvents {
				if ev := <-w.ResultChan(); ev.Type != storage.Bookmark || !ev.InitialEventsEnd || ev.Revision != start {
					t.Fatalf("after the initial events: %s@%d (end %v); want the bookmark ending them at %d", ev.Type, ev.Revision, ev.InitialEventsEnd, start)
				}
			}
		})
	}
}

// caughtUp waits until c has applied every write of its backend and
// returns that revision.
func caughtUp(t testing.TB, c *Cacher) int64 {
	t.Helper()
	rev, err := c.backend.CurrentRevision(testContext(t))
	if err != nil {
		t.Fatalf("CurrentRevision: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for c.h.Revision() < rev {
		if time.Now().After(deadline) {
			t.Fatalf("the cache did not reach revision %d in 30s", rev)
		}
		time.Sleep(time.Millisecond)
	}
	return rev
}

// unorderedProgress is a backend that says whether its watches' progress
// reports are ordered with their events, as an etcd3 store learns from its
// etcd's version.
type unorderedProgress struct {
	storage.Interface
	ordered atomic.Bool
}

func (b *unorderedProgress) ProgressOrdered() bool { return b.ordered.Load() }

// TestConsistentReadsTrustOrderedProgressOnly checks that consistent reads
// are served by the cache only when the backend's progress reports are
// ordered with its events (etcd >= 3.4.31, >= 3.5.13), and go to the
// backend otherwise, as kube-apiserver's watch cache decides; reads not
// older than a revision are served by the cache either way.
func TestConsistentReadsTrustOrderedProgressOnly(t *testing.T) {
	ctx := testContext(t)
	backend := &unorderedProgress{Interface: newMemory()}
	c := testCacher(t, backend)
	rev := mustCreate(t, ctx, c, "/p/a", val("a", 1))
	caughtUp(t, c)
	for _, ordered := range []bool{false, true} {
		backend.ordered.Store(ordered)
		for _, tc := range []struct {
			name       string
			consistent bool
			read       func() error
		}{
			{"consistent Get", true, func() error { _, err := c.Get(ctx, "/p/a", storage.GetOptions{}); return err }},
			{"consistent List", true, func() error { _, err := c.List(ctx, "/p/", storage.ListOptions{}); return err }},
			{"consistent Watch", true, func() error {
				w, err := c.Watch(ctx, "/p/", storage.WatchOptions{})
				if err == nil {
					drain(t, w, 1)
					w.Stop()
				}
				return err
			}},
			{"Get not older than a revision", false, func() error {
				_, err := c.Get(ctx, "/p/a", storage.GetOptions{MinRevision: rev})
				return err
			}},
			{"List not older than a revision", false, func() error {
				_, err := c.List(ctx, "/p/", storage.ListOptions{Revision: rev, Match: storage.MatchNotOlderThan})
				return err
			}},
		} {
			before := c.delegated.Load()
			if err := tc.read(); err != nil {
				t.Fatalf("%s (ordered %v): %v", tc.name, ordered, err)
			}
			delegated := c.delegated.Load() > before
			if want := tc.consistent && !ordered; delegated != want {
				t.Errorf("%s with progress ordered %v: served by the backend %v, want %v", tc.name, ordered, delegated, want)
			}
		}
	}
}

// TestBookmarkBeforeDeadline checks that a watch that asked for bookmarks
// gets one shortly before its context's deadline (a client's
// timeoutSeconds), as kube-apiserver's watch cache sends it, however far
// the next periodic bookmark is; a watch that did not ask gets none.
func TestBookmarkBeforeDeadline(t *testing.T) {
	for _, bookmarks := range []bool{true, false} {
		t.Run(fmt.Sprintf("bookmarks %v", bookmarks), func(t *testing.T) {
			c := testCacher(t, newMemory(), WithBookmarkInterval(time.Hour))
			mustCreate(t, testContext(t), c, "/d/a", val("a", 1))
			rev := caughtUp(t, c)
			timeout := storage.DeadlineBookmarkLead + time.Second
			ctx, cancel := context.WithTimeout(testContext(t), timeout)
			defer cancel()
			start := time.Now()
			w, err := c.Watch(ctx, "/d/", storage.WatchOptions{Revision: rev, Bookmarks: bookmarks})
			if err != nil {
				t.Fatalf("Watch: %v", err)
			}
			defer w.Stop()
			var got []storage.Event
			for ev := range w.ResultChan() {
				got = append(got, ev)
			}
			switch {
			case !bookmarks && len(got) > 0:
				t.Fatalf("a watch without bookmarks got %+v", got)
			case !bookmarks:
			case len(got) != 1 || got[0].Type != storage.Bookmark || got[0].Revision != rev:
				t.Fatalf("the watch got %+v; want one Bookmark at %d before its deadline", got, rev)
			}
			if d := time.Since(start); d < timeout-100*time.Millisecond {
				t.Fatalf("the watch ended after %v, before its deadline", d)
			}
		})
	}
}

// TestIdleGoroutines: an idle cache runs two goroutines of its own, the
// backend watch's reader and the loop that asks for progress and ages the
// window; the quorum reads of the backend's revision run on a goroutine
// only while some are asked for. A server has a cache per resource (14 in
// an idle wardle), and each parked goroutine keeps a stack. (The memory
// backend's watch has goroutines of its own, as etcd's client has.)
func TestIdleGoroutines(t *testing.T) {
	ctx := testContext(t)
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"dynamic window", nil},
		{"fixed capacity", []Option{WithCapacity(100)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := ownGoroutines()
			backend := newMemory()
			defer backend.Close()
			c := New(backend, "/x/", tc.opts...)
			defer c.Close()
			if err := c.WaitReady(ctx); err != nil {
				t.Fatalf("WaitReady: %v", err)
			}
			mustPut(t, ctx, c, "/x/a", val("a", 1))
			// A consistent read asks for the backend's revision.
			if _, err := c.Get(ctx, "/x/a", storage.GetOptions{}); err != nil {
				t.Fatalf("Get: %v", err)
			}
			const want = 2
			deadline := time.Now().Add(5 * time.Second)
			for ownGoroutines()-base != want {
				if time.Now().After(deadline) {
					t.Fatalf("%d goroutines in an idle cache, want %d", ownGoroutines()-base, want)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// ownGoroutines counts the goroutines running the Cacher's own code.
func ownGoroutines() int {
	return storagetest.Goroutines(func(g string) bool {
		return strings.Contains(g, "apikit/storage/cacher.(*Cacher)") && !strings.Contains(g, "testing.tRunner")
	})
}
