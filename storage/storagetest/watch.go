package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/storage"
)

func mustWatch(t testing.TB, ctx context.Context, s storage.Interface, prefix string, opts storage.WatchOptions) storage.Watcher {
	t.Helper()
	w, err := s.Watch(ctx, prefix, opts)
	if err != nil {
		t.Fatalf("Watch(%q, %+v): %v", prefix, opts, err)
	}
	t.Cleanup(w.Stop)
	return w
}

// next returns the next event, or false when the channel closed.
func next(t testing.TB, w storage.Watcher) (storage.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		return ev, ok
	case <-time.After(eventTimeout):
		t.Fatalf("no event within %v", eventTimeout)
		return storage.Event{}, false
	}
}

func describe(ev storage.Event) string {
	s := fmt.Sprintf("%s %q rev %d", ev.Type, ev.Key, ev.Revision)
	if ev.Value != nil {
		s += " value " + string(ev.Value)
	}
	if ev.PrevValue != nil {
		s += " prev " + string(ev.PrevValue)
	}
	if ev.Err != nil {
		s += " err " + ev.Err.Error()
	}
	if ev.InitialEventsEnd {
		s += " (initial events end)"
	}
	return s
}

// expectEvents reads len(want) events and compares them with want. A zero
// Revision in want is not compared; a nil PrevValue is not compared.
func expectEvents(t testing.TB, w storage.Watcher, want ...storage.Event) {
	t.Helper()
	for i, wev := range want {
		ev, ok := next(t, w)
		if !ok {
			t.Fatalf("event %d: channel closed; want %s", i, describe(wev))
		}
		if ev.Type != wev.Type || ev.Key != wev.Key || !bytes.Equal(ev.Value, wev.Value) ||
			(wev.Revision != 0 && ev.Revision != wev.Revision) ||
			(wev.PrevValue != nil && !bytes.Equal(ev.PrevValue, wev.PrevValue)) ||
			ev.InitialEventsEnd != wev.InitialEventsEnd {
			t.Fatalf("event %d:\n got %s\nwant %s", i, describe(ev), describe(wev))
		}
	}
}

// expectInitial reads len(want) Added events in any order.
func expectInitial(t testing.TB, w storage.Watcher, want ...storage.Event) {
	t.Helper()
	var got []storage.Event
	for range want {
		ev, ok := next(t, w)
		if !ok {
			t.Fatal("channel closed during initial events")
		}
		got = append(got, ev)
	}
	slices.SortFunc(got, func(a, b storage.Event) int { return cmpString(a.Key, b.Key) })
	slices.SortFunc(want, func(a, b storage.Event) int { return cmpString(a.Key, b.Key) })
	for i := range want {
		g, w := got[i], want[i]
		if g.Type != storage.Added || g.Key != w.Key || !bytes.Equal(g.Value, w.Value) || (w.Revision != 0 && g.Revision != w.Revision) {
			t.Fatalf("initial events:\n got %s\nwant %s", describe(g), describe(w))
		}
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func expectNoEvent(t testing.TB, w storage.Watcher, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("unexpected event %s", describe(ev))
		}
		t.Fatal("channel closed unexpectedly")
	case <-time.After(d):
	}
}

// expectNoEventExcept fails on any event within d but those of the given
// type.
func expectNoEventExcept(t testing.TB, w storage.Watcher, d time.Duration, allowed storage.EventType) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("channel closed unexpectedly")
			}
			if ev.Type != allowed {
				t.Fatalf("unexpected event %s", describe(ev))
			}
		case <-deadline:
			return
		}
	}
}

func expectClosed(t testing.TB, w storage.Watcher, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("channel still open %v after the watch ended", within)
		}
	}
}

func testWatch(t *testing.T, f Factory) {
	t.Run("from a revision", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			// startAfter: the watch starts after the writes (replay from
			// history) or before them (live).
			startAfter bool
		}{
			{"live", false},
			{"replayed from history", true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s, ctx := newStore(t, f), testContext(t)
				mustCreate(t, ctx, s, "/watch/before", value("before", 0))
				from := currentRevision(t, ctx, s)
				var w storage.Watcher
				if !tc.startAfter {
					w = mustWatch(t, ctx, s, "/watch/", storage.WatchOptions{Revision: from})
				}
				v1, v2, v3 := value("a", 1), value("a", 2), value("a", 3)
				r1 := mustCreate(t, ctx, s, "/watch/a", v1)
				r2 := mustUpdate(t, ctx, s, "/watch/a", v2).Revision
				r3 := mustDelete(t, ctx, s, "/watch/a").Revision
				r4 := mustCreate(t, ctx, s, "/watch/a", v3)
				rb := mustUpdate(t, ctx, s, "/watch/before", value("before", 1)).Revision
				if tc.startAfter {
					w = mustWatch(t, ctx, s, "/watch/", storage.WatchOptions{Revision: from})
				}
				expectEvents(t, w,
					storage.Event{Type: storage.Added, Key: "/watch/a", Value: v1, Revision: r1},
					storage.Event{Type: storage.Modified, Key: "/watch/a", Value: v2, PrevValue: v1, Revision: r2},
					storage.Event{Type: storage.Deleted, Key: "/watch/a", Value: v2, Revision: r3},
					storage.Event{Type: storage.Added, Key: "/watch/a", Value: v3, Revision: r4},
					storage.Event{Type: storage.Modified, Key: "/watch/before", Value: value("before", 1), PrevValue: value("before", 0), Revision: rb},
				)
				expectNoEvent(t, w, 100*time.Millisecond)
			})
		}
	})
	t.Run("from a revision in the middle of history", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		mustCreate(t, ctx, s, "/watch/a", value("a", 1))
		r2 := mustUpdate(t, ctx, s, "/watch/a", value("a", 2)).Revision
		r3 := mustUpdate(t, ctx, s, "/watch/a", value("a", 3)).Revision
		w := mustWatch(t, ctx, s, "/watch/", storage.WatchOptions{Revision: r2})
		expectEvents(t, w, storage.Event{Type: storage.Modified, Key: "/watch/a", Value: value("a", 3), PrevValue: value("a", 2), Revision: r3})
		expectNoEvent(t, w, 100*time.Millisecond)
	})
	t.Run("revision zero starts with the current objects", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		rx := mustCreate(t, ctx, s, "/watch/x", value("x", 1))
		mustCreate(t, ctx, s, "/watch/y", value("y", 1))
		ry := mustUpdate(t, ctx, s, "/watch/y", value("y", 2)).Revision
		mustCreate(t, ctx, s, "/watch/gone", value("gone", 1))
		mustDelete(t, ctx, s, "/watch/gone")
		w := mustWatch(t, ctx, s, "/watch/", storage.WatchOptions{})
		expectInitial(t, w,
			storage.Event{Key: "/watch/x", Value: value("x", 1), Revision: rx},
			storage.Event{Key: "/watch/y", Value: value("y", 2), Revision: ry},
		)
		rz := mustCreate(t, ctx, s, "/watch/z", value("z", 1))
		expectEvents(t, w, storage.Event{Type: storage.Added, Key: "/watch/z", Value: value("z", 1), Revision: rz})
	})
	t.Run("revision zero under concurrent writes sees each write once", func(t *testing.T) {
		// Every key is written once while the watches start: each must
		// come exactly once, in the initial state or as a later event.
		s, ctx := newStore(t, f), testContext(t)
		const writers, perWriter = 8, 25
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				for j := range perWriter {
					if _, err := s.Create(ctx, fmt.Sprintf("/race/%d-%d", i, j), value("v", j)); err != nil {
						t.Errorf("create: %v", err)
						return
					}
				}
			})
		}
		var watchers []storage.Watcher
		for _, opts := range []storage.WatchOptions{{}, {SendInitialEvents: true}} {
			for range 3 {
				watchers = append(watchers, mustWatch(t, ctx, s, "/race/", opts))
				time.Sleep(2 * time.Millisecond)
			}
		}
		wg.Wait()
		for i, w := range watchers {
			seen := map[string]int{}
			for len(seen) < writers*perWriter {
				ev, ok := next(t, w)
				if !ok {
					t.Fatalf("watch %d closed after %d keys", i, len(seen))
				}
				switch ev.Type {
				case storage.Bookmark:
					continue
				case storage.Added:
				default:
					t.Fatalf("watch %d: %s", i, describe(ev))
				}
				seen[ev.Key]++
				if seen[ev.Key] > 1 {
					t.Fatalf("watch %d: %q delivered twice", i, ev.Key)
				}
			}
			expectNoEventExcept(t, w, 50*time.Millisecond, storage.Bookmark)
		}
	})
	t.Run("SendInitialEvents", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			atMid bool // watch not older than the revision between x and y
		}{
			{name: "at the latest revision"},
			{name: "not older than an older revision", atMid: true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s, ctx := newStore(t, f), testContext(t)
				rx := mustCreate(t, ctx, s, "/watch/x", value("x", 1))
				ry := mustCreate(t, ctx, s, "/watch/y", value("y", 1))
				opts := storage.WatchOptions{SendInitialEvents: true}
				if tc.atMid {
					opts.Revision = rx
				}
				before := currentRevision(t, ctx, s)
				w := mustWatch(t, ctx, s, "/watch/", opts)
				// Both send the current state: a revision only says how
				// old it may not be, as kube-apiserver reads
				// resourceVersionMatch=NotOlderThan.
				expectInitial(t, w,
					storage.Event{Key: "/watch/x", Value: value("x", 1), Revision: rx},
					storage.Event{Key: "/watch/y", Value: value("y", 1), Revision: ry})
				ev, _ := next(t, w)
				if ev.Type != storage.Bookmark || !ev.InitialEventsEnd || ev.Revision < before {
					t.Fatalf("after the initial events got %s; want a Bookmark ending them at revision >= %d", describe(ev), before)
				}
				r := mustUpdate(t, ctx, s, "/watch/x", value("x", 2)).Revision
				expectEvents(t, w, storage.Event{Type: storage.Modified, Key: "/watch/x", Value: value("x", 2), PrevValue: value("x", 1), Revision: r})
			})
		}
	})
	t.Run("predicate", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			opts storage.WatchOptions
		}{
			{"from a revision", storage.WatchOptions{}},
			{"with initial events", storage.WatchOptions{SendInitialEvents: true}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s, ctx := newStore(t, f), testContext(t)
				mustCreate(t, ctx, s, "/watch/blue0", value("blue0", 0, "color", "blue"))
				red0 := value("red0", 0, "color", "red")
				r0 := mustCreate(t, ctx, s, "/watch/red0", red0)
				opts := tc.opts
				opts.Predicate = labelPredicate("color", "red")
				if !opts.SendInitialEvents {
					opts.Revision = currentRevision(t, ctx, s)
				}
				w := mustWatch(t, ctx, s, "/watch/", opts)
				if opts.SendInitialEvents {
					expectEvents(t, w, storage.Event{Type: storage.Added, Key: "/watch/red0", Value: red0, Revision: r0})
					if ev, _ := next(t, w); ev.Type != storage.Bookmark || !ev.InitialEventsEnd {
						t.Fatalf("got %s; want the bookmark ending initial events", describe(ev))
					}
				}
				red1, blue, red2, red3 := value("a", 1, "color", "red"), value("a", 2, "color", "blue"), value("a", 3, "color", "red"), value("a", 4, "color", "red")
				r1 := mustCreate(t, ctx, s, "/watch/a", red1)
				r2 := mustUpdate(t, ctx, s, "/watch/a", blue).Revision
				mustCreate(t, ctx, s, "/watch/b", value("b", 1, "color", "blue"))
				mustUpdate(t, ctx, s, "/watch/b", value("b", 2, "color", "green"))
				r3 := mustUpdate(t, ctx, s, "/watch/a", red2).Revision
				r4 := mustUpdate(t, ctx, s, "/watch/a", red3).Revision
				mustDelete(t, ctx, s, "/watch/b")
				r5 := mustDelete(t, ctx, s, "/watch/a").Revision
				expectEvents(t, w,
					storage.Event{Type: storage.Added, Key: "/watch/a", Value: red1, Revision: r1},
					storage.Event{Type: storage.Deleted, Key: "/watch/a", Value: red1, Revision: r2},
					storage.Event{Type: storage.Added, Key: "/watch/a", Value: red2, Revision: r3},
					storage.Event{Type: storage.Modified, Key: "/watch/a", Value: red3, PrevValue: red2, Revision: r4},
					storage.Event{Type: storage.Deleted, Key: "/watch/a", Value: red3, Revision: r5},
				)
				expectNoEvent(t, w, 100*time.Millisecond)
			})
		}
	})
	t.Run("compacted revision is Expired", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			opts func(old int64) storage.WatchOptions
		}{
			{"from a revision", func(old int64) storage.WatchOptions { return storage.WatchOptions{Revision: old} }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s, ctx := newStore(t, f), testContext(t)
				old := mustCreate(t, ctx, s, "/watch/a", value("a", 1))
				mustUpdate(t, ctx, s, "/watch/a", value("a", 2))
				mustUpdate(t, ctx, s, "/watch/a", value("a", 3))
				rev := mustUpdate(t, ctx, s, "/watch/a", value("a", 4)).Revision
				if err := f.Compact(ctx, s, rev); err != nil {
					t.Fatalf("Compact(%d): %v", rev, err)
				}
				w, err := s.Watch(ctx, "/watch/", tc.opts(old))
				if err != nil {
					wantCode(t, "Watch from a compacted revision", err, storage.ErrExpired)
					return
				}
				defer w.Stop()
				ev, ok := next(t, w)
				if !ok || ev.Type != storage.ErrorEvent || !errors.Is(ev.Err, storage.ErrExpired) {
					t.Fatalf("first event %s (open %v); want an ErrorEvent with ErrExpired", describe(ev), ok)
				}
				expectClosed(t, w, eventTimeout)
			})
		}
	})
	t.Run("initial events not older than a compacted revision are the current state", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		old := mustCreate(t, ctx, s, "/watch/a", value("a", 1))
		mustUpdate(t, ctx, s, "/watch/a", value("a", 2))
		rb := mustCreate(t, ctx, s, "/watch/b", value("b", 1))
		ra := mustUpdate(t, ctx, s, "/watch/a", value("a", 3)).Revision
		if err := f.Compact(ctx, s, ra); err != nil {
			t.Fatalf("Compact(%d): %v", ra, err)
		}
		w := mustWatch(t, ctx, s, "/watch/", storage.WatchOptions{Revision: old, SendInitialEvents: true})
		expectInitial(t, w,
			storage.Event{Key: "/watch/a", Value: value("a", 3), Revision: ra},
			storage.Event{Key: "/watch/b", Value: value("b", 1), Revision: rb})
		if ev, _ := next(t, w); ev.Type != storage.Bookmark || !ev.InitialEventsEnd || ev.Revision < ra {
			t.Fatalf("after the initial events got %s; want a Bookmark ending them at revision >= %d", describe(ev), ra)
		}
		rc := mustCreate(t, ctx, s, "/watch/c", value("c", 1))
		expectEvents(t, w, storage.Event{Type: storage.Added, Key: "/watch/c", Value: value("c", 1), Revision: rc})
	})
	t.Run("prefix isolation", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		from := currentRevision(t, ctx, s)
		w := mustWatch(t, ctx, s, "/iso/a/", storage.WatchOptions{Revision: from})
		mustCreate(t, ctx, s, "/iso/ab/x", value("x", 1))
		mustCreate(t, ctx, s, "/iso/a", value("a", 1))
		mustCreate(t, ctx, s, "/iso/b/x", value("x", 1))
		r := mustCreate(t, ctx, s, "/iso/a/x", value("x", 2))
		mustUpdate(t, ctx, s, "/iso/ab/x", value("x", 3))
		expectEvents(t, w, storage.Event{Type: storage.Added, Key: "/iso/a/x", Value: value("x", 2), Revision: r})
		expectNoEvent(t, w, 200*time.Millisecond)
	})
	t.Run("Bookmarks", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		mustCreate(t, ctx, s, "/watch/a", value("a", 1))
		from := currentRevision(t, ctx, s)
		w := mustWatch(t, ctx, s, "/watch/", storage.WatchOptions{Revision: from, Bookmarks: true})
		within := 5*f.BookmarkInterval + 2*time.Second
		waitBookmark := func(atLeast int64) {
			t.Helper()
			deadline := time.After(within)
			for {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Fatal("channel closed")
					}
					if ev.Type == storage.Bookmark {
						if ev.Revision < atLeast {
							continue // one that was on its way before the write
						}
						return
					}
					if ev.Type == storage.ErrorEvent {
						t.Fatalf("got %s", describe(ev))
					}
				case <-deadline:
					t.Fatalf("no Bookmark at revision >= %d within %v (interval %v)", atLeast, within, f.BookmarkInterval)
				}
			}
		}
		waitBookmark(from)
		// Writes to another prefix move the store on; a bookmark says the
		// watch has seen everything up to that revision.
		other := mustCreate(t, ctx, s, "/other/x", value("x", 1))
		waitBookmark(other)
	})
	t.Run("RequestProgress", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		mustCreate(t, ctx, s, "/watch/a", value("a", 1))
		w := mustWatch(t, ctx, s, "/watch/", storage.WatchOptions{Revision: currentRevision(t, ctx, s)})
		pr, ok := w.(storage.ProgressRequester)
		if !ok {
			t.Skip("the store's watchers do not implement storage.ProgressRequester")
		}
		// Writes elsewhere move the store on; asked for progress, a watch
		// without periodic bookmarks reports the new revision.
		other := mustCreate(t, ctx, s, "/other/x", value("x", 1))
		deadline := time.After(eventTimeout)
		for {
			if err := pr.RequestProgress(ctx); err != nil {
				t.Fatalf("RequestProgress: %v", err)
			}
			select {
			case ev, ok := <-w.ResultChan():
				if !ok || ev.Type != storage.Bookmark {
					t.Fatalf("got %s (open %v); want only a Bookmark", describe(ev), ok)
				}
				if ev.Revision >= other {
					return
				}
			case <-time.After(100 * time.Millisecond):
				// etcd answers once every watch on the stream caught up:
				// ask again.
			case <-deadline:
				t.Fatalf("no Bookmark at revision >= %d within %v", other, eventTimeout)
			}
		}
	})
	t.Run("a watch that falls behind is closed without an error and resumes", func(t *testing.T) {
		if f.SlowWatchers == nil {
			t.Skip("the store's watches do not fall behind")
		}
		testSlowWatcher(t, f)
	})
	t.Run("no Bookmarks unless asked", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		w := mustWatch(t, ctx, s, "/watch/", storage.WatchOptions{Revision: currentRevision(t, ctx, s)})
		expectNoEvent(t, w, 2*f.BookmarkInterval+200*time.Millisecond)
	})
	t.Run("Stop and context end close the channel and leak nothing", func(t *testing.T) { testWatchStop(t, f) })
}

func testWatchStop(t *testing.T, f Factory) {
	s, ctx := newStore(t, f), testContext(t)
	// A first watch warms up whatever a backend starts once (an etcd
	// client's watch stream) so that it does not count as a leak.
	warm := mustWatch(t, ctx, s, "/warm/", storage.WatchOptions{Revision: currentRevision(t, ctx, s)})
	mustCreate(t, ctx, s, "/warm/a", value("a", 1))
	expectEvents(t, warm, storage.Event{Type: storage.Added, Key: "/warm/a", Value: value("a", 1)})

	base := backendGoroutines()
	for _, tc := range []struct {
		name string
		end  func(w storage.Watcher, cancel context.CancelFunc)
		// busy: events are waiting unread when the watch ends.
		busy bool
		opts storage.WatchOptions
	}{
		{"Stop", func(w storage.Watcher, _ context.CancelFunc) { w.Stop() }, false, storage.WatchOptions{}},
		{"Stop twice", func(w storage.Watcher, _ context.CancelFunc) { w.Stop(); w.Stop() }, false, storage.WatchOptions{}},
		{"Stop with unread events", func(w storage.Watcher, _ context.CancelFunc) { w.Stop() }, true, storage.WatchOptions{}},
		{"context cancel", func(_ storage.Watcher, cancel context.CancelFunc) { cancel() }, false, storage.WatchOptions{}},
		{"context cancel with unread events", func(_ storage.Watcher, cancel context.CancelFunc) { cancel() }, true, storage.WatchOptions{}},
		{"Stop with bookmarks and a predicate", func(w storage.Watcher, _ context.CancelFunc) { w.Stop() }, true,
			storage.WatchOptions{Bookmarks: true, Predicate: labelPredicate("color", "red")}},
		{"Stop during initial events", func(w storage.Watcher, _ context.CancelFunc) { w.Stop() }, true,
			storage.WatchOptions{SendInitialEvents: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			opts := tc.opts
			if !opts.SendInitialEvents {
				opts.Revision = currentRevision(t, ctx, s)
			}
			var ws []storage.Watcher
			for range 5 {
				w, err := s.Watch(wctx, "/stop/", opts)
				if err != nil {
					t.Fatalf("Watch: %v", err)
				}
				ws = append(ws, w)
			}
			if tc.busy {
				for i := range 20 {
					_, err := s.GuaranteedUpdate(ctx, fmt.Sprintf("/stop/%d", i%4), storage.UpdateOptions{IgnoreNotFound: true},
						func(cur storage.KeyValue) ([]byte, error) {
							return value(fmt.Sprint(i), i, "color", "red"), nil
						})
					if err != nil {
						t.Fatalf("GuaranteedUpdate: %v", err)
					}
				}
				// Let the events reach the watchers' buffers.
				time.Sleep(50 * time.Millisecond)
			}
			for _, w := range ws {
				tc.end(w, cancel)
			}
			for _, w := range ws {
				expectClosed(t, w, 2*time.Second)
			}
			if !eventually(5*time.Second, func() bool { return backendGoroutines() <= base }) {
				t.Fatalf("%d backend goroutines still run after the watches ended; %d before", backendGoroutines(), base)
			}
		})
	}
}

// testSlowWatcher checks that a watch whose consumer stops reading is
// closed without an ErrorEvent, as kube-apiserver's watch cache closes it,
// after a gapless run of its events, and while the revision its client
// resumes from is still kept: a Kubernetes reflector watches again from the
// last revision it got (after an error, or a 410 for that revision, it
// would list everything again), and that watch delivers the rest.
func testSlowWatcher(t *testing.T, f Factory) {
	// A watch can only be seen to stall once its goroutine ran while the
	// consumer was not reading: on a busy machine it may not have before
	// the consumer reads again, and then nothing was behind.
	const attempts = 3
	for attempt := 1; !slowWatchAttempt(t, f); attempt++ {
		if attempt == attempts {
			t.Fatalf("in %d attempts the watch delivered every event it was left behind by; want it closed", attempts)
		}
	}
}

// slowWatchAttempt runs one slow watch; false means it was never closed.
func slowWatchAttempt(t *testing.T, f Factory) bool {
	s, n := f.SlowWatchers(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx := testContext(t)
	from := currentRevision(t, ctx, s)
	w := mustWatch(t, ctx, s, "/slow/", storage.WatchOptions{Revision: from})
	defer w.Stop()
	writes := 2 * n
	revs := make([]int64, writes)
	for i := range writes {
		revs[i] = mustCreate(t, ctx, s, fmt.Sprintf("/slow/k%05d", i), value("k", i))
	}
	// The consumer goes on not reading for a while: long enough for a
	// watch cache to count its watcher as not keeping up.
	time.Sleep(time.Second)
	ch := w.ResultChan()
	// The consumer reads again: what comes is a gapless run of the
	// events, then the end of the watch, with no error.
	got := 0
	timeout := time.After(eventTimeout)
read:
	for {
		select {
		case ev, ok := <-ch:
			switch {
			case !ok:
				break read
			case ev.Type == storage.ErrorEvent:
				t.Fatalf("after %d events the watch ended with %s; want it closed without an error, so that a client resumes instead of listing again", got, describe(ev))
			case ev.Type == storage.Bookmark:
				continue
			case ev.Type != storage.Added || ev.Key != fmt.Sprintf("/slow/k%05d", got) || ev.Revision != revs[got]:
				t.Fatalf("event %d is %s; want the create of /slow/k%05d at %d", got, describe(ev), got, revs[got])
			}
			got++
			if got == writes {
				t.Logf("the watch delivered all %d events it was left behind by; want it closed about %d behind", writes, n)
				return false
			}
		case <-timeout:
			t.Fatalf("the watch, %d events behind, got %d of them and was not closed within %v", writes, got, eventTimeout)
		}
	}
	t.Logf("the slow watch was closed after %d of %d events", got, writes)
	last := from
	if got > 0 {
		last = revs[got-1]
	}
	// The store still has every change after last: the client resumes
	// without a 410 and without listing again.
	again := mustWatch(t, ctx, s, "/slow/", storage.WatchOptions{Revision: last})
	defer again.Stop()
	for i := got; i < writes; i++ {
		expectEvents(t, again, storage.Event{Type: storage.Added, Key: fmt.Sprintf("/slow/k%05d", i), Value: value("k", i), Revision: revs[i]})
	}
	return true
}
