package etcd3

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/storage"
)

// TestProgressNotHeldByWatchesFromThePast checks that a watch which
// started with its state (a watch cache's) gets its progress requests
// answered while a watch from a past revision has not caught up yet. etcd
// answers a progress request only when every watch on the stream has
// caught up, and it catches up a watch from the past only every 100 ms:
// on one shared stream the request below would be dropped, and with no
// bookmark due for an hour nothing would answer it. A server's start
// makes many such watches (its informers', delegated by watch caches that
// are not ready yet) while its consistent reads wait for progress.
func TestProgressNotHeldByWatchesFromThePast(t *testing.T) {
	s := New(newClient(t, etcdtest.Start(t)), WithPrefix("/progress-test"), WithBookmarkInterval(time.Hour))
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var first int64
	for i := range 5 {
		rev, err := s.Create(ctx, fmt.Sprintf("/past/%d", i), []byte("x"))
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if i == 0 {
			first = rev
		}
	}
	current, err := s.Watch(ctx, "/current/", storage.WatchOptions{SendInitialEvents: true, Bookmarks: true})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer current.Stop()
	if ev := next(t, current, 10*time.Second); ev.Type != storage.Bookmark || !ev.InitialEventsEnd {
		t.Fatalf("first event %+v, want the end of the initial events", ev)
	}
	pr, ok := current.(storage.ProgressRequester)
	if !ok {
		t.Fatal("the etcd3 watcher does not implement storage.ProgressRequester")
	}
	// Each try has a watch from the past that has not caught up (etcd
	// catches it up at most 100 ms later; the request goes out after
	// 10 ms): one try in ten might pass on a shared stream, all five
	// hardly ever.
	for try := range 5 {
		past, err := s.Watch(ctx, "/past/", storage.WatchOptions{Revision: first})
		if err != nil {
			t.Fatalf("Watch from revision %d: %v", first, err)
		}
		time.Sleep(10 * time.Millisecond) // the watch reaches etcd
		// A write moves the revision, so that the answer is a bookmark
		// this watch has not sent yet.
		rev, err := s.Create(ctx, fmt.Sprintf("/past/more-%d", try), []byte("x"))
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		start := time.Now()
		if err := pr.RequestProgress(ctx); err != nil {
			t.Fatalf("RequestProgress: %v", err)
		}
		ev := next(t, current, 5*time.Second)
		if ev.Type != storage.Bookmark || ev.Revision < rev {
			t.Fatalf("try %d: got %+v, want a bookmark at revision %d or later", try, ev, rev)
		}
		t.Logf("try %d: progress answered after %v", try, time.Since(start).Round(time.Microsecond))
		past.Stop()
	}
}

// next returns w's next event, failing the test after timeout.
func next(t *testing.T, w storage.Watcher, timeout time.Duration) storage.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch ended")
		}
		return ev
	case <-time.After(timeout):
		t.Fatalf("no event within %v", timeout)
	}
	return storage.Event{}
}
