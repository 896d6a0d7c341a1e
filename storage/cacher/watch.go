package cacher

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/storage"
)

const (
	// maxBatch bounds the changes a watcher copies out of the window per
	// hold of the lock.
	maxBatch = 64
	// outBuffer is the capacity of a watch's result channel.
	outBuffer = 16
)

// watcher is one watch served by the cache. Its goroutine reads the
// cache's window from its own position: writers never wait for it, and a
// watcher that falls out of the window ends with an error.
type watcher struct {
	c         *Cacher
	ctx       context.Context
	prefix    string
	pred      storage.Predicate
	bookmarks bool

	// failure, when set, is the only event the watch sends.
	failure error
	// initial, when not nil, is the state at initRev the watch sends
	// first as Added events: a snapshot taken when the watch started, so
	// that changes leaving the window meanwhile cannot fail it. With
	// initEnd, the Bookmark that ends them follows.
	initial []storage.KeyValue
	initEnd bool
	initRev int64
	// after: changes at or before it are not sent.
	after int64
	// epoch is the cache state the watch reads; cursor the sequence number
	// of the next change to read; group what it waits on.
	epoch  uint64
	cursor uint64
	group  *wakeGroup
	// gen is the last bookmark tick handled; lastBookmark the revision of
	// the last Bookmark sent.
	gen          uint64
	lastBookmark int64

	batch []event
	// pos is the sequence number of the change being sent; stalledAt
	// when the consumer left the channel full before it (nanoseconds since
	// the cache started); lagged is closed when the watcher, stalled on
	// it, fell too far behind.
	pos       uint64
	stalledAt int64
	lagged    chan struct{}

	out      chan storage.Event
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

var _ storage.Watcher = (*watcher)(nil)

// ResultChan implements storage.Watcher.
func (w *watcher) ResultChan() <-chan storage.Event { return w.out }

// Stop implements storage.Watcher. It returns once the channel is closed.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

// Watch implements storage.Interface; see the package documentation for
// what the cache serves.
func (c *Cacher) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.Watcher, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, errClosed()
	}
	prefix = storage.ListPrefix(prefix)
	if !c.ready.Load() || !c.covers(prefix) {
		return c.delegateWatch(ctx, prefix, opts)
	}
	rev := opts.Revision
	initial := rev == 0 || opts.SendInitialEvents
	if initial {
		// The state sent first is the latest (a consistent read), or one
		// not older than a revision the cache may not have reached yet,
		// with the writes made through the cache, as a NotOlderThan list.
		delegate, err := c.sync(ctx, rev, rev > 0)
		if err != nil {
			return nil, err
		}
		if delegate {
			return c.delegateWatch(ctx, prefix, opts)
		}
	}
	w := &watcher{
		c:         c,
		ctx:       ctx,
		prefix:    prefix,
		pred:      opts.Predicate,
		bookmarks: opts.Bookmarks,
		out:       make(chan storage.Event, outBuffer),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		lagged:    make(chan struct{}),
	}
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return nil, errClosed()
	case !c.ready.Load():
		c.mu.Unlock()
		return c.delegateWatch(ctx, prefix, opts)
	}
	if initial {
		// The current state, as kube-apiserver's watch cache sends it: a
		// revision the client gave only says how old it may not be.
		rev = c.seen
	}
	switch {
	case !initial && rev < c.watchFloor:
		w.failure = storage.NewExpired(rev, c.watchFloor+1)
	default:
		if initial {
			w.initial = c.snapshotLocked(prefix)
			w.initEnd, w.initRev = opts.SendInitialEvents, rev
		}
		w.after = rev
		w.epoch = c.epoch
		w.cursor = c.firstSeq + uint64(sort.Search(len(c.events), func(i int) bool { return c.events[i].cur.rev > rev }))
		w.gen = c.bookmarkGen
		w.group = c.wakes[prefix]
		if w.group == nil {
			w.group = &wakeGroup{ch: make(chan struct{})}
			c.wakes[prefix] = w.group
		}
		w.group.n++
		c.watchers[w] = struct{}{}
		if w.bookmarks {
			c.bookmarkers++
		}
	}
	c.mu.Unlock()
	go w.run()
	return w, nil
}

// snapshotLocked returns the objects under prefix at the latest revision.
// The caller holds c.mu.
func (c *Cacher) snapshotLocked(prefix string) []storage.KeyValue {
	kvs := make([]storage.KeyValue, 0, min(c.live, 1024))
	for rec := range c.index.From(prefix) {
		if !strings.HasPrefix(rec.key, prefix) {
			break
		}
		if v := rec.latest(); v != nil {
			kvs = append(kvs, storage.KeyValue{Key: rec.key, Value: v.value, Revision: v.rev, Memo: v.memo})
		}
	}
	return kvs
}

func (c *Cacher) removeWatcher(w *watcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.watchers[w]; !ok {
		return
	}
	delete(c.watchers, w)
	delete(c.stalled, w)
	if w.bookmarks {
		c.bookmarkers--
	}
	if w.group.n--; w.group.n == 0 {
		delete(c.wakes, w.prefix)
	}
}

func errReinitialized() error {
	return &storage.Error{Code: storage.CodeExpired,
		Message: "the watch cache lost its history and listed again: list and watch again"}
}

func (w *watcher) run() {
	defer close(w.done)
	defer close(w.out)
	defer w.c.removeWatcher(w)
	if w.failure != nil {
		w.send(storage.Event{Type: storage.ErrorEvent, Err: w.failure})
		return
	}
	if w.initial != nil && !w.sendInitial() {
		return
	}
	c := w.c
	var due <-chan time.Time // the bookmark before the watch's deadline
	if w.bookmarks {
		var stop func()
		due, stop = storage.DeadlineBookmark(w.ctx)
		defer stop()
	}
	deadlineBookmark := false
	for {
		var err error
		behind := false
		c.mu.RLock()
		next := c.firstSeq + uint64(len(c.events))
		var first uint64 // the sequence number of batch[0]
		if w.cursor < c.firstSeq && w.group.evicted <= w.cursor {
			// Only changes under other prefixes left the window.
			w.cursor = c.firstSeq
		}
		switch {
		case c.epoch != w.epoch:
			err = errReinitialized()
		case w.cursor < c.firstSeq:
			behind = true
		default:
			off := w.cursor - c.firstSeq
			n := min(next-w.cursor, maxBatch)
			w.batch = append(w.batch[:0], c.events[off:off+n]...)
			first = w.cursor
			w.cursor += n
		}
		caughtUp := w.cursor == next
		seen, gen, wake := c.seen, c.bookmarkGen, w.group.ch
		c.mu.RUnlock()
		if err != nil {
			w.send(storage.Event{Type: storage.ErrorEvent, Err: err})
			return
		}
		if behind {
			// Closed without an error, as kube-apiserver's watch cache
			// closes a watcher that does not keep up: its client watches
			// again from the last revision it got, and lists only when
			// that is gone too.
			c.cfg.logger.Debug("watch cache: closing a watch that fell behind the window", "prefix", w.prefix)
			return
		}
		whole := w.prefix == c.root
		for i := range w.batch {
			e := &w.batch[i]
			if e.cur.rev <= w.after || (!whole && !strings.HasPrefix(e.key, w.prefix)) {
				continue
			}
			w.pos = first + uint64(i)
			if !w.emit(e) {
				if w.isLagged() {
					c.cfg.logger.Debug("watch cache: closing a watch whose consumer does not keep up", "prefix", w.prefix)
				}
				return
			}
		}
		clear(w.batch) // hold no value longer than needed
		if !caughtUp {
			continue
		}
		if w.bookmarks && (gen != w.gen || deadlineBookmark) {
			// Every change up to seen has been sent.
			w.gen, deadlineBookmark = gen, false
			if seen >= w.after && seen > w.lastBookmark {
				w.lastBookmark = seen
				if !w.send(storage.Event{Type: storage.Bookmark, Revision: seen}) {
					return
				}
			}
		}
		select {
		case <-wake:
		case <-due:
			due, deadlineBookmark = nil, true
		case <-w.stop:
			return
		case <-w.ctx.Done():
			return
		}
	}
}

// sendInitial sends the snapshot taken when the watch started as Added
// events, then the Bookmark that ends them when asked.
func (w *watcher) sendInitial() bool {
	initial := w.initial
	w.initial = nil
	for i, kv := range initial {
		initial[i] = storage.KeyValue{} // hold no value longer than needed
		if !w.pred.Empty() {
			match, err := w.pred.Matches(kv.Value, kv.Memo)
			if err != nil {
				w.send(storage.Event{Type: storage.ErrorEvent, Err: fmt.Errorf("watch of %q: filtering %q: %w", w.prefix, kv.Key, err)})
				return false
			}
			if !match {
				continue
			}
		}
		if !w.send(storage.Event{Type: storage.Added, Key: kv.Key, Value: kv.Value, Revision: kv.Revision, Memo: kv.Memo}) {
			return false
		}
	}
	if w.initEnd {
		return w.send(storage.Event{Type: storage.Bookmark, Revision: w.initRev, InitialEventsEnd: true})
	}
	return true
}

// emit sends what the watcher's predicate lets through of a change.
func (w *watcher) emit(e *event) bool {
	ev := e.toStorage()
	if !w.pred.Empty() {
		var ok bool
		var err error
		if ev, ok, err = w.filter(e, ev); err != nil {
			w.send(storage.Event{Type: storage.ErrorEvent, Err: fmt.Errorf("watch of %q: filtering %q: %w", w.prefix, e.key, err)})
			return false
		} else if !ok {
			return true
		}
	}
	return w.sendChange(ev)
}

// sendChange sends the change at w.pos. While the consumer leaves the
// channel full, the watcher is registered as stalled: once that lasted
// stallBudget, it is closed if it is too far behind, then or at a later
// change (see closeLaggingLocked). The cost is on the stalled watcher; a
// change pays one length check when none stalls.
func (w *watcher) sendChange(ev storage.Event) bool {
	select {
	case w.out <- ev:
		return true
	default:
	}
	c := w.c
	c.mu.Lock()
	registered := c.epoch == w.epoch
	if registered {
		w.stalledAt = int64(time.Since(c.start))
		c.stalled[w] = struct{}{}
	}
	c.mu.Unlock()
	if !registered {
		return w.send(ev)
	}
	budget := time.NewTimer(stallBudget)
	defer budget.Stop()
	for {
		select {
		case w.out <- ev:
			c.mu.Lock()
			delete(c.stalled, w)
			c.mu.Unlock()
			return true
		case <-budget.C:
			// No change came to close it: check now.
			c.mu.Lock()
			if _, ok := c.stalled[w]; ok {
				c.closeLaggingLocked(int64(time.Since(c.start)))
			}
			c.mu.Unlock()
		case <-w.lagged:
			return false
		case <-w.stop:
			return false
		case <-w.ctx.Done():
			return false
		}
	}
}

func (w *watcher) isLagged() bool {
	select {
	case <-w.lagged:
		return true
	default:
		return false
	}
}

// filter is storage.Predicate.FilterEvent with the memos of both versions,
// so that the attributes of neither are decoded again: an object that
// starts matching is Added, one that stops matching is Deleted.
func (w *watcher) filter(e *event, ev storage.Event) (storage.Event, bool, error) {
	switch e.typ {
	case added:
		ok, err := w.pred.Matches(e.cur.value, e.cur.memo)
		return ev, ok, err
	case deleted:
		ok, err := w.pred.Matches(e.prev.value, e.prev.memo)
		return ev, ok, err
	}
	cur, err := w.pred.Matches(e.cur.value, e.cur.memo)
	if err != nil {
		return ev, false, err
	}
	prev, err := w.pred.Matches(e.prev.value, e.prev.memo)
	if err != nil {
		return ev, false, err
	}
	switch {
	case cur && prev:
		return ev, true, nil
	case cur:
		ev.Type, ev.PrevValue = storage.Added, nil
		return ev, true, nil
	case prev:
		// No memo: the previous value at this revision has none of its
		// own, and a change out of a selector is rare.
		return storage.Event{Type: storage.Deleted, Key: e.key, Value: e.prev.value, Revision: e.cur.rev}, true, nil
	}
	return ev, false, nil
}

func (w *watcher) send(ev storage.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-w.stop:
		return false
	case <-w.ctx.Done():
		return false
	}
}
