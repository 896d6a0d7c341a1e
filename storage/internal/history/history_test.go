package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
)

// val is the tests' value: a string, "color=red" style, whose label is
// its text.
type val struct {
	data []byte
	memo *storage.Memo
}

func (v val) Data() []byte { return v.data }
func (v val) KeyValue(key string, rev int64) storage.KeyValue {
	return storage.KeyValue{Key: key, Value: v.data, Revision: rev, Memo: v.memo}
}
func (v val) Memo() *storage.Memo { return v.memo }

func newVal(s string) val { return val{data: []byte(s), memo: storage.NewMemo()} }

// op is one write of a test: a put of value, or a delete.
type op struct {
	key, value string
	del        bool
}

func put(key, value string) op { return op{key: key, value: value} }
func del(key string) op        { return op{key: key, del: true} }

// newHistory returns a ready history at revision 1 with ops applied at
// revisions 2, 3, ...; it is closed when the test ends.
func newHistory(t *testing.T, cfg Config, ops ...op) *History[val] {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = "/"
	}
	h := New[val](cfg)
	t.Cleanup(h.Close)
	h.Install(nil, 1)
	apply(h, ops...)
	return h
}

func apply(h *History[val], ops ...op) {
	h.Lock()
	defer h.Unlock()
	for _, o := range ops {
		v := newVal(o.value)
		if o.del {
			v.data = nil
		}
		h.PutLocked(o.key, h.RevisionLocked()+1, v, o.del)
	}
}

// at returns key's value at rev as the history lists it, "-" for none.
func at(t *testing.T, h *History[val], key string, rev int64) string {
	t.Helper()
	res, ok, err := h.List(key, key, rev, 0, storage.Predicate{})
	switch {
	case err != nil:
		t.Fatalf("List(%q) at %d: %v", key, rev, err)
	case !ok:
		return "not held"
	case len(res.Items) == 0:
		return "-"
	}
	return string(res.Items[0].Value)
}

func TestCompaction(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []op // at revisions 2, 3, ...
		to   int64
		// want is key's value at each revision; "not held" below the floor.
		key          string
		want         map[int64]string
		changes      int // left in the log
		versions     int
		watchFloor   int64
		readFloorMin int64
	}{
		{
			name: "keeps the version a read at the floor sees",
			ops:  []op{put("/a", "1"), put("/a", "2"), put("/b", "x"), put("/a", "3")},
			to:   4, key: "/a",
			want:    map[int64]string{3: "not held", 4: "2", 5: "3"},
			changes: 2, versions: 3, watchFloor: 3, readFloorMin: 4,
		},
		{
			name: "a tombstone below the floor takes the key",
			ops:  []op{put("/a", "1"), del("/a"), put("/b", "x")},
			to:   4, key: "/a",
			want:    map[int64]string{2: "not held", 4: "-"},
			changes: 1, versions: 1, watchFloor: 3, readFloorMin: 4,
		},
		{
			name: "a tombstone at the floor takes the key; its change stays",
			ops:  []op{put("/a", "1"), del("/a")},
			to:   3, key: "/a",
			want:    map[int64]string{3: "-"},
			changes: 1, versions: 0, watchFloor: 2, readFloorMin: 3,
		},
		{
			name: "compacting past the latest revision stops at it",
			ops:  []op{put("/a", "1"), put("/a", "2")},
			to:   10, key: "/a",
			want:    map[int64]string{2: "not held", 3: "2"},
			changes: 1, versions: 1, watchFloor: 2, readFloorMin: 3,
		},
		{
			name: "an older revision is a no-op",
			ops:  []op{put("/a", "1"), put("/a", "2")},
			to:   1, key: "/a",
			want:    map[int64]string{1: "-", 2: "1", 3: "2"},
			changes: 2, versions: 2, watchFloor: 1, readFloorMin: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory(t, Config{}, tc.ops...)
			h.Lock()
			h.CompactLocked(tc.to)
			floor, watchFloor := h.FloorsLocked()
			h.Unlock()
			for rev, want := range tc.want {
				if got := at(t, h, tc.key, rev); got != want {
					t.Errorf("%s at %d = %s; want %s", tc.key, rev, got, want)
				}
			}
			changes, versions, _ := h.Stats()
			if changes != tc.changes || versions != tc.versions {
				t.Errorf("%d changes and %d versions held; want %d and %d", changes, versions, tc.changes, tc.versions)
			}
			if watchFloor != tc.watchFloor || floor < tc.readFloorMin {
				t.Errorf("floors %d (read) and %d (watch); want >= %d and %d", floor, watchFloor, tc.readFloorMin, tc.watchFloor)
			}
		})
	}
}

func TestEvictBySize(t *testing.T) {
	h := newHistory(t, Config{}, put("/a", "1"), put("/a", "2"), put("/b", "1"), put("/a", "3"))
	h.Lock()
	h.EvictLocked(func(_ *Change[val], size int) bool { return size > 2 }, 0)
	floor, watchFloor := h.FloorsLocked()
	h.Unlock()
	if changes, _, _ := h.Stats(); changes != 2 {
		t.Fatalf("%d changes left; want 2", changes)
	}
	if floor != 3 || watchFloor != 3 {
		t.Fatalf("floors %d and %d; want both at the newest evicted change, 3", floor, watchFloor)
	}
	if got := at(t, h, "/a", 3); got != "2" {
		t.Fatalf("/a at the floor = %s; want 2", got)
	}
}

func TestWaitRevision(t *testing.T) {
	for _, tc := range []struct {
		name string
		rev  int64
		// meanwhile runs while the caller waits.
		meanwhile func(h *History[val], cancel context.CancelFunc)
		reached   bool
		err       error
	}{
		{"already there", 1, nil, true, nil},
		{"a later write", 3, func(h *History[val], _ context.CancelFunc) { apply(h, put("/a", "1"), put("/a", "2")) }, true, nil},
		{"a backend's bookmark", 5, func(h *History[val], _ context.CancelFunc) {
			h.Lock()
			h.AdvanceLocked(5)
			h.Unlock()
		}, true, nil},
		{"never comes", 3, nil, false, nil},
		{"reset", 3, func(h *History[val], _ context.CancelFunc) { h.Reset(errors.New("lost")) }, false, nil},
		{"closed", 3, func(h *History[val], _ context.CancelFunc) { h.Close() }, false, ErrClosed},
		{"context ends", 3, func(_ *History[val], cancel context.CancelFunc) { cancel() }, false, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory(t, Config{})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			waiting := make(chan struct{})
			type result struct {
				reached bool
				err     error
			}
			done := make(chan result, 1)
			wait := 200 * time.Millisecond
			if tc.meanwhile != nil {
				wait = time.Minute // what ends the wait is meanwhile
			}
			go func() {
				r, err := h.WaitRevision(ctx, tc.rev, wait, func() { close(waiting) })
				done <- result{r, err}
			}()
			if tc.meanwhile != nil {
				<-waiting
				tc.meanwhile(h, cancel)
			}
			select {
			case r := <-done:
				if r.reached != tc.reached || !errors.Is(r.err, tc.err) {
					t.Fatalf("WaitRevision = %v, %v; want %v, %v", r.reached, r.err, tc.reached, tc.err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("WaitRevision did not return")
			}
			if n := h.Waiting(); n != 0 {
				t.Fatalf("%d waiters left", n)
			}
		})
	}
}

// recv returns the next event of w, failing the test after a generous
// timeout.
func recv(t *testing.T, w storage.Watcher) (storage.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		return ev, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return storage.Event{}, false
	}
}

func describe(ev storage.Event) string {
	switch ev.Type {
	case storage.Bookmark:
		return fmt.Sprintf("BOOKMARK %d end=%v", ev.Revision, ev.InitialEventsEnd)
	case storage.ErrorEvent:
		return "ERROR " + ev.Err.Error()
	}
	return fmt.Sprintf("%s %s=%s %d", ev.Type, ev.Key, ev.Value, ev.Revision)
}

// expect reads len(want) events of w and compares them with want, as
// describe writes them.
func expect(t *testing.T, w storage.Watcher, want ...string) {
	t.Helper()
	for i, d := range want {
		ev, ok := recv(t, w)
		if !ok {
			t.Fatalf("event %d: closed; want %s", i, d)
		}
		if got := describe(ev); got != d {
			t.Fatalf("event %d: %s; want %s", i, got, d)
		}
	}
}

func TestWatchCursor(t *testing.T) {
	// Revisions: 2 /a/x=1, 3 /b/y=1, 4 /a/x=2, 5 /a/z=1; compacted to 3.
	ops := []op{put("/a/x", "1"), put("/b/y", "1"), put("/a/x", "2"), put("/a/z", "1")}
	for _, tc := range []struct {
		name   string
		prefix string
		opts   storage.WatchOptions
		want   []string
	}{
		{"from a revision: the changes after it under the prefix", "/a/", storage.WatchOptions{Revision: 3},
			[]string{"MODIFIED /a/x=2 4", "ADDED /a/z=1 5", "ADDED /a/w=1 6"}},
		{"from the watch floor", "/", storage.WatchOptions{Revision: 2},
			[]string{"ADDED /b/y=1 3", "MODIFIED /a/x=2 4", "ADDED /a/z=1 5", "ADDED /a/w=1 6"}},
		{"from 0: the state, then changes", "/a/", storage.WatchOptions{},
			[]string{"ADDED /a/x=2 4", "ADDED /a/z=1 5", "ADDED /a/w=1 6"}},
		{"initial events end with a bookmark", "/b/", storage.WatchOptions{SendInitialEvents: true, Revision: 3},
			[]string{"ADDED /b/y=1 3", "BOOKMARK 5 end=true", "ADDED /b/v=1 7"}},
		{"from a compacted revision: Expired", "/a/", storage.WatchOptions{Revision: 1},
			[]string{"ERROR " + storage.NewExpired(1, 3).Error()}},
		{"from a future revision: what comes after it", "/", storage.WatchOptions{Revision: 6},
			[]string{"ADDED /b/v=1 7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory(t, Config{}, ops...)
			h.Lock()
			h.CompactLocked(3)
			h.Unlock()
			w, err := h.Watch(t.Context(), tc.prefix, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			apply(h, put("/a/w", "1"), put("/b/v", "1"))
			expect(t, w, tc.want...)
		})
	}
}

// colorPredicate matches values "color=<c>".
func colorPredicate(t *testing.T, c string) storage.Predicate {
	sel, err := meta.ParseLabelSelector("color=" + c)
	if err != nil {
		t.Fatal(err)
	}
	return storage.Predicate{Label: sel, GetAttrs: func(v []byte) (meta.Set, meta.Set, error) {
		k, v2, ok := strings.Cut(string(v), "=")
		if !ok {
			return nil, nil, fmt.Errorf("bad value %q", v)
		}
		return meta.Set{k: v2}, nil, nil
	}}
}

func TestWatchFilter(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []op // after the watch's start, at revisions 3, ...
		want []string
	}{
		{"add of a match", []op{put("/k/b", "color=red")}, []string{"ADDED /k/b=color=red 3"}},
		{"add of another", []op{put("/k/b", "color=blue"), put("/k/c", "color=red")}, []string{"ADDED /k/c=color=red 4"}},
		{"a match changes", []op{put("/k/a", "color=red")}, []string{"MODIFIED /k/a=color=red 3"}},
		{"into the selector: Added", []op{put("/k/a", "color=blue"), put("/k/a", "color=red")},
			[]string{"DELETED /k/a=color=red 3", "ADDED /k/a=color=red 4"}},
		{"out of the selector: Deleted with the last matching value", []op{put("/k/a", "color=blue")},
			[]string{"DELETED /k/a=color=red 3"}},
		{"delete of a match", []op{del("/k/a")}, []string{"DELETED /k/a=color=red 3"}},
		{"an undecodable value ends the watch", []op{put("/k/a", "garbage")}, []string{"ERROR watch of \"/k/\": filtering \"/k/a\": bad value \"garbage\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory(t, Config{}, put("/k/a", "color=red"))
			w, err := h.Watch(t.Context(), "/k/", storage.WatchOptions{Revision: 2, Predicate: colorPredicate(t, "red")})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			apply(h, tc.ops...)
			expect(t, w, tc.want...)
		})
	}
}

// TestSlowWatcher checks that a watcher whose consumer stalls while far
// behind is closed without an error, that writers never wait for it, and
// that a watcher whose consumer reads on is not.
func TestSlowWatcher(t *testing.T) {
	const lag, out = 5, 4
	for _, tc := range []struct {
		name   string
		writes int
		closed bool
	}{
		{"far behind: closed", 3 * (lag + out), true},
		{"within the bound: waited for", lag, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory(t, Config{LagBound: lag, OutBuffer: out})
			slow, err := h.Watch(t.Context(), "/s/", storage.WatchOptions{Revision: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer slow.Stop()
			reader, err := h.Watch(t.Context(), "/s/", storage.WatchOptions{Revision: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Stop()
			start := time.Now()
			for i := range tc.writes {
				apply(h, put(fmt.Sprintf("/s/%03d", i), "v"))
				expect(t, reader, fmt.Sprintf("ADDED /s/%03d=v %d", i, i+2))
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("%d writes took %v with a stalled watcher", tc.writes, d)
			}
			// Long past the stall budget, however busy the machine.
			time.Sleep(10 * StallBudget)
			got := 0
			for {
				ev, ok := recv(t, slow)
				if !ok {
					break
				}
				if ev.Type == storage.ErrorEvent {
					t.Fatalf("the slow watcher ended with %s; want it closed without an error", describe(ev))
				}
				if got++; got == tc.writes {
					break
				}
			}
			if closed := got < tc.writes; closed != tc.closed {
				t.Fatalf("the slow watcher got %d of %d events; want closed %v", got, tc.writes, tc.closed)
			}
		})
	}
}

// TestCompactKeepsUnreadChanges checks that a compaction does not end a
// running watch: it gets every change, while a new watch from before the
// compacted revision is refused.
func TestCompactKeepsUnreadChanges(t *testing.T) {
	h := newHistory(t, Config{OutBuffer: 1})
	w, err := h.Watch(t.Context(), "/", storage.WatchOptions{Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var want []string
	for i := range 10 {
		apply(h, put("/k", fmt.Sprint(i)))
		typ := "MODIFIED"
		if i == 0 {
			typ = "ADDED"
		}
		want = append(want, fmt.Sprintf("%s /k=%d %d", typ, i, i+2))
	}
	h.Lock()
	h.CompactLocked(11)
	h.Unlock()
	expect(t, w, want...)
	late, err := h.Watch(t.Context(), "/", storage.WatchOptions{Revision: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Stop()
	expect(t, late, "ERROR "+storage.NewExpired(5, 11).Error())
	// Once read, the next compaction drops them.
	apply(h, put("/k", "x"))
	h.Lock()
	h.CompactLocked(12)
	h.Unlock()
	expect(t, w, "MODIFIED /k=x 12")
	if changes, versions, _ := h.Stats(); changes != 1 || versions != 1 {
		t.Fatalf("%d changes and %d versions held after the watcher read them", changes, versions)
	}
}

func TestBookmarks(t *testing.T) {
	t.Run("periodic, at the revision everything is sent up to", func(t *testing.T) {
		h := newHistory(t, Config{BookmarkInterval: 20 * time.Millisecond})
		w, err := h.Watch(t.Context(), "/a/", storage.WatchOptions{Revision: 1, Bookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		apply(h, put("/b/x", "1"))
		for {
			ev, _ := recv(t, w)
			if ev.Type != storage.Bookmark {
				t.Fatalf("got %s; want bookmarks only", describe(ev))
			}
			if ev.Revision == 2 {
				break
			}
		}
	})
	t.Run("requested, without asking for bookmarks", func(t *testing.T) {
		h := newHistory(t, Config{BookmarkInterval: time.Hour})
		w, err := h.Watch(t.Context(), "/a/", storage.WatchOptions{Revision: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		apply(h, put("/b/x", "1"), put("/a/x", "1"))
		if err := w.RequestProgress(t.Context()); err != nil {
			t.Fatal(err)
		}
		expect(t, w, "ADDED /a/x=1 3", "BOOKMARK 3 end=false")
		// Asked again with nothing new: answered all the same.
		if err := w.RequestProgress(t.Context()); err != nil {
			t.Fatal(err)
		}
		expect(t, w, "BOOKMARK 3 end=false")
	})
	t.Run("the ticker runs only while watches ask for bookmarks", func(t *testing.T) {
		h := newHistory(t, Config{BookmarkInterval: 10 * time.Millisecond})
		w, err := h.Watch(t.Context(), "/a/", storage.WatchOptions{Revision: 1, Bookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		h.RLock()
		running := h.tickStop != nil
		h.RUnlock()
		w.Stop()
		h.RLock()
		stopped := h.tickStop == nil
		h.RUnlock()
		if !running || !stopped {
			t.Fatalf("ticker running with a bookmark watch: %v; stopped after: %v", running, stopped)
		}
	})
}

func TestResetEndsWatches(t *testing.T) {
	h := newHistory(t, Config{}, put("/a", "1"))
	w, err := h.Watch(t.Context(), "/", storage.WatchOptions{Revision: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	lost := errors.New("lost")
	if !h.Reset(lost) {
		t.Fatal("Reset of a ready history reported false")
	}
	if ev, _ := recv(t, w); ev.Type != storage.ErrorEvent || !errors.Is(ev.Err, lost) {
		t.Fatalf("got %s; want the reset's error", describe(ev))
	}
	if _, err := h.Watch(t.Context(), "/", storage.WatchOptions{}); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Watch after Reset: %v; want ErrNotReady", err)
	}
	if _, ok, _ := h.List("/", "/", 0, 0, storage.Predicate{}); ok {
		t.Fatal("List after Reset served")
	}
	state := NewState[val]()
	state.Add("/b", 7, newVal("1"))
	if h.Install(state, 9) {
		t.Fatal("Install after a Reset reported a first state")
	}
	if got := at(t, h, "/b", 0); got != "1" {
		t.Fatalf("/b after Install = %s", got)
	}
}

func TestCloseEndsWatches(t *testing.T) {
	h := New[val](Config{Root: "/"})
	h.Install(nil, 1)
	w, err := h.Watch(t.Context(), "/", storage.WatchOptions{Revision: 1, Bookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if _, ok := recv(t, w); ok {
		t.Fatal("watch open after Close")
	}
	if _, err := h.Watch(t.Context(), "/", storage.WatchOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Watch after Close: %v; want ErrClosed", err)
	}
	h.Close() // twice is fine
}

func TestListPages(t *testing.T) {
	h := newHistory(t, Config{}, put("/l/a", "color=red"), put("/l/b", "color=blue"), put("/l/c", "color=red"), put("/m/a", "color=red"))
	for _, tc := range []struct {
		name      string
		limit     int64
		pred      storage.Predicate
		keys      string
		more      bool
		remaining int64 // -1: not known
	}{
		{"all", 0, storage.Predicate{}, "/l/a /l/b /l/c", false, -1},
		{"a page", 2, storage.Predicate{}, "/l/a /l/b", true, 1},
		{"filtered", 0, colorPredicate(t, "red"), "/l/a /l/c", false, -1},
		{"a filtered page", 1, colorPredicate(t, "red"), "/l/a", true, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, ok, err := h.List("/l/", "/l/", 0, tc.limit, tc.pred)
			if err != nil || !ok {
				t.Fatalf("List: %v, %v", ok, err)
			}
			var keys []string
			for _, kv := range res.Items {
				keys = append(keys, kv.Key)
			}
			if got := strings.Join(keys, " "); got != tc.keys || (res.Continue != "") != tc.more || res.Revision != 5 {
				t.Fatalf("List = %s at %d, continue %q; want %s, more %v", got, res.Revision, res.Continue, tc.keys, tc.more)
			}
			if (res.RemainingItemCount == nil) != (tc.remaining < 0) || (res.RemainingItemCount != nil && *res.RemainingItemCount != tc.remaining) {
				t.Fatalf("RemainingItemCount %v; want %d", res.RemainingItemCount, tc.remaining)
			}
		})
	}
}
