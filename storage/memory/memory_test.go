package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
)

func TestSlowWatcherIsEndedNotWaitedFor(t *testing.T) {
	s := New(WithWatchBuffer(10))
	defer s.Close()
	ctx := t.Context()
	slow, err := s.Watch(ctx, "/a/", storage.WatchOptions{Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := s.Watch(ctx, "/a/", storage.WatchOptions{Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	got := make(chan int64)
	go func() {
		defer close(got)
		for ev := range fast.ResultChan() {
			if ev.Type == storage.ErrorEvent {
				t.Errorf("the fast watcher got %v", ev.Err)
				return
			}
			got <- ev.Revision
		}
	}()
	// Nobody reads slow: writers must not wait for it.
	start := time.Now()
	for i := range 100 {
		rev, err := s.Create(ctx, fmt.Sprintf("/a/%04d", i), []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		if r := <-got; r != rev {
			t.Fatalf("fast watcher got revision %d, want %d", r, rev)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("100 writes took %v with a stuck watcher", d)
	}
	// A consumer counts as stalled once it left the channel full for the
	// stall budget, as kube-apiserver's watch cache counts it.
	time.Sleep(time.Second)
	n := 0
	deadline := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case ev, ok := <-slow.ResultChan():
			switch {
			case !ok:
				open = false
			case ev.Type == storage.ErrorEvent:
				t.Fatalf("slow watcher ended after %d events with %v; want it closed without an error, as kube's watch cache closes it", n, ev.Err)
			default:
				n++
			}
		case <-deadline:
			t.Fatalf("slow watcher not closed after %d events; want it closed 10 events behind", n)
		}
	}
	if n >= 100 {
		t.Fatalf("slow watcher got all %d events; want it closed 10 events behind", n)
	}
	if n := s.h.Watchers(); n != 1 {
		t.Fatalf("%d watchers registered; want the fast one only", n)
	}
}

func TestAutomaticCompaction(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := New(WithCompactionInterval(time.Minute), func(c *config) { c.now = clock })
	defer s.Close()
	ctx := t.Context()
	write := func(i int) int64 {
		t.Helper()
		kv, err := s.GuaranteedUpdate(ctx, "/k", storage.UpdateOptions{IgnoreNotFound: true}, func(storage.KeyValue) ([]byte, error) {
			return []byte(fmt.Sprint(i)), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return kv.Revision
	}
	r1 := write(1)
	advance(61 * time.Second)
	r2 := write(2) // first tick: records r1 as the next compaction point
	if c := s.compacted(); c != 1 {
		t.Fatalf("compacted to %d on the first tick", c)
	}
	advance(61 * time.Second)
	write(3) // second tick: compacts to what the store had one interval ago
	if c := s.compacted(); c != r1 {
		t.Fatalf("compacted to %d; want %d, the revision one interval earlier", c, r1)
	}
	if _, err := s.List(ctx, "/", storage.ListOptions{Revision: r1 - 1, Match: storage.MatchExact}); !errors.Is(err, storage.ErrExpired) {
		t.Fatalf("List before the compacted revision: %v; want ErrExpired", err)
	}
	l, err := s.List(ctx, "/", storage.ListOptions{Revision: r2, Match: storage.MatchExact})
	if err != nil || len(l.Items) != 1 || string(l.Items[0].Value) != "2" {
		t.Fatalf("List at %d = %+v, %v", r2, l, err)
	}
	// Deleted keys go once their tombstone is compacted.
	if _, err := s.Delete(ctx, "/k", storage.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		advance(61 * time.Second)
		if _, err := s.Create(ctx, fmt.Sprintf("/other/%d", s.h.Revision()), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	// Left: the three /other keys, each with its one version.
	if changes, versions, keys := s.h.Stats(); keys != 3 || versions != 3 {
		t.Fatalf("%d keys with %d versions left; want the deleted key's history gone with compaction", keys, versions)
	} else if changes > 3 {
		t.Fatalf("%d log entries left; the compacted ones should be gone", changes)
	}
}

func TestCompact(t *testing.T) {
	s := New()
	defer s.Close()
	ctx := t.Context()
	rev, _ := s.Create(ctx, "/a", []byte("1"))
	if err := s.Compact(rev + 1); !errors.Is(err, storage.ErrTooLargeResourceVersion) {
		t.Fatalf("Compact past the current revision: %v", err)
	}
	if err := s.Compact(rev); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(rev - 1); err != nil {
		t.Fatalf("Compact to an older revision: %v; want a no-op", err)
	}
	if kv, err := s.Get(ctx, "/a", storage.GetOptions{}); err != nil || kv.Revision != rev {
		t.Fatalf("Get after Compact = %+v, %v", kv, err)
	}
}

func TestCloseEndsWatchesAndCalls(t *testing.T) {
	s := New()
	ctx := t.Context()
	w, err := s.Watch(ctx, "/a/", storage.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("watch still open after Close")
	}
	for name, err := range map[string]error{
		"Create": func() error { _, err := s.Create(ctx, "/a/x", nil); return err }(),
		"Get":    func() error { _, err := s.Get(ctx, "/a/x", storage.GetOptions{}); return err }(),
		"List":   func() error { _, err := s.List(ctx, "/a/", storage.ListOptions{}); return err }(),
		"Watch":  func() error { _, err := s.Watch(ctx, "/a/", storage.WatchOptions{}); return err }(),
	} {
		if !errors.Is(err, storage.ErrUnavailable) {
			t.Errorf("%s after Close: %v; want ErrUnavailable", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestValuesAreCopiedOnWrite(t *testing.T) {
	s := New()
	defer s.Close()
	ctx := t.Context()
	v := []byte("original")
	if _, err := s.Create(ctx, "/a", v); err != nil {
		t.Fatal(err)
	}
	copy(v, "mutated!")
	if kv, _ := s.Get(ctx, "/a", storage.GetOptions{}); string(kv.Value) != "original" {
		t.Fatalf("stored value changed with the caller's slice: %q", kv.Value)
	}
}

func TestMemoIsPerValue(t *testing.T) {
	s := New()
	defer s.Close()
	ctx := t.Context()
	s.Create(ctx, "/a", []byte("1"))
	a1, _ := s.Get(ctx, "/a", storage.GetOptions{})
	a2, _ := s.Get(ctx, "/a", storage.GetOptions{})
	if a1.Memo == nil || a1.Memo != a2.Memo {
		t.Fatal("two reads of one value do not share its Memo")
	}
	upd, _ := s.GuaranteedUpdate(ctx, "/a", storage.UpdateOptions{}, func(storage.KeyValue) ([]byte, error) { return []byte("2"), nil })
	if upd.Memo == nil || upd.Memo == a1.Memo {
		t.Fatal("a new value kept the old value's Memo")
	}
	// A delete reports the last value at its own revision: its event has
	// a memo of its own, shared by every watcher.
	w1, _ := s.Watch(ctx, "/", storage.WatchOptions{Revision: upd.Revision})
	defer w1.Stop()
	w2, _ := s.Watch(ctx, "/", storage.WatchOptions{Revision: upd.Revision})
	defer w2.Stop()
	if _, err := s.Delete(ctx, "/a", storage.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e1, e2 := <-w1.ResultChan(), <-w2.ResultChan()
	if e1.Type != storage.Deleted || e1.Memo == nil || e1.Memo == upd.Memo || e2.Memo != e1.Memo {
		t.Fatalf("Deleted events %s with memos %p and %p; the value's is %p", e1.Type, e1.Memo, e2.Memo, upd.Memo)
	}
}

func TestWatchPredicateErrorEndsTheWatch(t *testing.T) {
	s := New()
	defer s.Close()
	ctx := t.Context()
	boom := errors.New("cannot decode")
	p := storage.Predicate{Label: onlySelector{}, GetAttrs: func([]byte) (meta.Set, meta.Set, error) { return nil, nil, boom }}
	w, err := s.Watch(ctx, "/a/", storage.WatchOptions{Revision: 1, Predicate: p})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	s.Create(ctx, "/a/x", []byte("garbage"))
	ev := <-w.ResultChan()
	if ev.Type != storage.ErrorEvent || !errors.Is(ev.Err, boom) {
		t.Fatalf("got %+v; want an ErrorEvent wrapping the decode error", ev)
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("watch still open after its ErrorEvent")
	}
}

// onlySelector is a non-empty selector that matches everything.
type onlySelector struct{}

func (onlySelector) Matches(meta.Set) bool                    { return true }
func (onlySelector) Empty() bool                              { return false }
func (onlySelector) String() string                           { return "x" }
func (onlySelector) RequiresExactMatch(string) (string, bool) { return "", false }

func TestWatchStopsWithContext(t *testing.T) {
	s := New()
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	w, err := s.Watch(ctx, "/a/", storage.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Fatal("event after cancel")
		}
	case <-time.After(time.Second):
		t.Fatal("channel not closed after cancel")
	}
	if eventuallyZero := func() bool {
		for range 100 {
			if s.h.Watchers() == 0 {
				return true
			}
			time.Sleep(5 * time.Millisecond)
		}
		return false
	}(); !eventuallyZero {
		t.Fatal("canceled watcher still registered")
	}
}

// TestBookmarkBeforeDeadline checks that a watch that asked for bookmarks
// gets one shortly before its context's deadline, as kube-apiserver's watch
// cache sends it, however far the next periodic bookmark is.
func TestBookmarkBeforeDeadline(t *testing.T) {
	s := New(WithBookmarkInterval(time.Hour))
	defer s.Close()
	rev, err := s.Create(t.Context(), "/d/a", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), storage.DeadlineBookmarkLead+time.Second)
	defer cancel()
	w, err := s.Watch(ctx, "/d/", storage.WatchOptions{Revision: rev, Bookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []storage.Event
	for ev := range w.ResultChan() {
		got = append(got, ev)
	}
	if len(got) != 1 || got[0].Type != storage.Bookmark || got[0].Revision != rev {
		t.Fatalf("the watch got %+v; want one Bookmark at %d before its deadline", got, rev)
	}
}

// compacted returns the oldest revision the store can still read.
func (s *Store) compacted() int64 {
	s.h.RLock()
	defer s.h.RUnlock()
	floor, _ := s.h.FloorsLocked()
	return floor
}
