package history

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apikit-dev/apikit/storage"
)

// maxBatch bounds the changes a watcher copies out of the log per hold of
// the lock.
const maxBatch = 64

// wakeGroup is what the watchers of one prefix wait on: a change under the
// prefix wakes them, one under another namespace does not, so that a change
// costs wake-ups of the watchers it concerns, not of all.
type wakeGroup struct {
	// ch is closed (and replaced) when a change under the prefix is
	// appended, or a bookmark is due.
	ch chan struct{}
	n  int // watchers
	// evicted is one past the sequence number of the newest change under
	// the prefix that left the log: a watcher whose cursor is below it
	// missed a change. Below it, a watcher only skipped others'.
	evicted uint64
}

func (g *wakeGroup) wake() {
	close(g.ch)
	g.ch = make(chan struct{})
}

// groupsOf calls f with the wake group of each prefix of key that has
// watchers. The caller holds the lock.
func (h *History[V]) groupsOf(key string, f func(*wakeGroup)) {
	if len(h.wakes) == 0 {
		return
	}
	for i := max(len(h.cfg.Root)-1, 0); i < len(key); i++ {
		if key[i] == '/' {
			if g := h.wakes[key[:i+1]]; g != nil {
				f(g)
			}
		}
	}
}

func (h *History[V]) wakeAllLocked() {
	for _, g := range h.wakes {
		g.wake()
	}
}

// Watcher is one watch served from the history. Its goroutine reads the
// log from its own cursor: writers never wait for it.
type Watcher[V Value] struct {
	h         *History[V]
	ctx       context.Context
	prefix    string
	pred      storage.Predicate
	bookmarks bool

	// failure, when set, is the only event the watch sends.
	failure error
	// initial, when not nil, is the state at initRev the watch sends
	// first as Added events: a snapshot taken when the watch started, so
	// that changes leaving the log meanwhile cannot fail it. With
	// initEnd, the Bookmark that ends them follows.
	initial []storage.KeyValue
	initEnd bool
	initRev int64
	// after: changes at or before it are not sent.
	after int64
	// epoch is the state the watch reads; cursor the sequence number of
	// the next change to read; group what it waits on.
	epoch  uint64
	cursor uint64
	group  *wakeGroup
	// gen is the last bookmark tick handled; lastBookmark the revision of
	// the last Bookmark sent; progress, when not 0, the revision a
	// RequestProgress asks a Bookmark at.
	gen          uint64
	lastBookmark int64
	progress     atomic.Int64

	batch []Change[V]
	// pos is the sequence number of the change being sent; stalledAt
	// when the consumer left the channel full before it; lagged is closed
	// when the watcher, stalled on it, fell too far behind.
	pos       uint64
	stalledAt int64
	lagged    chan struct{}

	out      chan storage.Event
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

var (
	_ storage.Watcher           = (*Watcher[Value])(nil)
	_ storage.ProgressRequester = (*Watcher[Value])(nil)
)

// ResultChan implements storage.Watcher.
func (w *Watcher[V]) ResultChan() <-chan storage.Event { return w.out }

// Stop implements storage.Watcher. It returns once the channel is closed.
func (w *Watcher[V]) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

// RequestProgress implements storage.ProgressRequester: the watch sends a
// Bookmark at the history's revision once it has sent every change up to
// it.
func (w *Watcher[V]) RequestProgress(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h := w.h
	w.progress.Store(max(h.Revision(), 1))
	// Wake the watcher in case it waits: with nothing to send, it answers
	// at once.
	h.Lock()
	if w.group != nil {
		w.group.wake()
	}
	h.Unlock()
	return nil
}

// Watch starts a watch of the keys under prefix (which ends in "/"): with
// opts.Revision 0 or opts.SendInitialEvents, the latest state as Added
// events first (then, with SendInitialEvents, a Bookmark that ends them),
// otherwise every change after opts.Revision, or an ErrorEvent with
// storage.ErrExpired when the log no longer has them all. The caller has
// waited for any revision the initial state must not be older than. It
// fails with ErrClosed, or ErrNotReady when the history holds no state.
func (h *History[V]) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (*Watcher[V], error) {
	w := &Watcher[V]{
		h:         h,
		ctx:       ctx,
		prefix:    prefix,
		pred:      opts.Predicate,
		bookmarks: opts.Bookmarks,
		out:       make(chan storage.Event, h.cfg.OutBuffer),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		lagged:    make(chan struct{}),
	}
	rev := opts.Revision
	initial := rev == 0 || opts.SendInitialEvents
	h.Lock()
	switch {
	case h.closed:
		h.Unlock()
		return nil, ErrClosed
	case !h.ready.Load():
		h.Unlock()
		return nil, ErrNotReady
	}
	if initial {
		// The current state, as kube-apiserver's watch cache sends it: a
		// revision the client gave only says how old it may not be.
		rev = h.seen
	}
	if !initial && rev < h.watchFloor {
		w.failure = storage.NewExpired(rev, h.watchFloor+1)
	} else {
		if initial {
			w.initial = h.snapshotLocked(prefix)
			w.initEnd, w.initRev = opts.SendInitialEvents, rev
		}
		w.after = rev
		w.epoch = h.epoch
		w.cursor = h.firstSeq + uint64(sort.Search(len(h.log), func(i int) bool { return h.log[i].Rev > rev }))
		w.gen = h.bookmarkGen
		h.addWatcherLocked(w)
	}
	h.Unlock()
	go w.run()
	return w, nil
}

// snapshotLocked returns the objects under prefix at the latest revision.
func (h *History[V]) snapshotLocked(prefix string) []storage.KeyValue {
	kvs := make([]storage.KeyValue, 0, h.index.CountLive(prefix, prefix))
	for rec := range h.index.Under(prefix, prefix) {
		if v, rev, ok := rec.latest(); ok {
			kvs = append(kvs, keyValue(rec.key, rev, v))
		}
	}
	return kvs
}

func keyValue[V Value](key string, rev int64, v V) storage.KeyValue {
	return v.KeyValue(key, rev)
}

func (h *History[V]) addWatcherLocked(w *Watcher[V]) {
	w.group = h.wakes[w.prefix]
	if w.group == nil {
		w.group = &wakeGroup{ch: make(chan struct{})}
		h.wakes[w.prefix] = w.group
	}
	w.group.n++
	h.watchers[w] = struct{}{}
	if w.bookmarks {
		h.bookmarkers++
		if h.bookmarkers == 1 && h.cfg.BookmarkInterval > 0 {
			h.tickStop = make(chan struct{})
			h.ticks.Add(1)
			go h.tick(h.tickStop)
		}
	}
}

func (h *History[V]) removeWatcher(w *Watcher[V]) {
	h.Lock()
	defer h.Unlock()
	if _, ok := h.watchers[w]; !ok {
		return
	}
	delete(h.watchers, w)
	delete(h.stalled, w)
	if w.bookmarks {
		if h.bookmarkers--; h.bookmarkers == 0 && h.tickStop != nil {
			close(h.tickStop)
			h.tickStop = nil
		}
	}
	if w.group.n--; w.group.n == 0 {
		delete(h.wakes, w.prefix)
	}
}

// tick starts a bookmark generation every interval while watches ask for
// bookmarks: it runs only while there are some, so that a history nobody
// watches has no goroutine to stop.
func (h *History[V]) tick(stop <-chan struct{}) {
	defer h.ticks.Done()
	t := time.NewTicker(h.cfg.BookmarkInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-stop:
			return
		}
		h.Lock()
		h.bookmarkGen++
		h.wakeAllLocked()
		h.Unlock()
	}
}

// Watchers returns the number of running watches.
func (h *History[V]) Watchers() int {
	h.RLock()
	defer h.RUnlock()
	return len(h.watchers)
}

// WakeGroups returns the number of prefixes watched, for tests.
func (h *History[V]) WakeGroups() int {
	h.RLock()
	defer h.RUnlock()
	return len(h.wakes)
}

func (w *Watcher[V]) run() {
	defer close(w.done)
	defer close(w.out)
	defer w.h.removeWatcher(w)
	if w.failure != nil {
		w.send(storage.Event{Type: storage.ErrorEvent, Err: w.failure})
		return
	}
	if w.initial != nil && !w.sendInitial() {
		return
	}
	h := w.h
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
		h.RLock()
		next := h.firstSeq + uint64(len(h.log))
		var first uint64 // the sequence number of batch[0]
		if w.cursor < h.firstSeq && w.group.evicted <= w.cursor {
			// Only changes under other prefixes left the log.
			w.cursor = h.firstSeq
		}
		switch {
		case h.epoch != w.epoch:
			err = h.resetErr
		case w.cursor < h.firstSeq:
			behind = true
		default:
			off := w.cursor - h.firstSeq
			n := min(next-w.cursor, maxBatch)
			w.batch = append(w.batch[:0], h.log[off:off+n]...)
			first = w.cursor
			w.cursor += n
		}
		caughtUp := w.cursor == next
		seen, gen, wake := h.seen, h.bookmarkGen, w.group.ch
		h.RUnlock()
		if err != nil {
			w.send(storage.Event{Type: storage.ErrorEvent, Err: err})
			return
		}
		if behind {
			// Closed without an error, as kube-apiserver's watch cache
			// closes a watcher that does not keep up: its client watches
			// again from the last revision it got, and lists only when
			// that is gone too.
			h.cfg.Logger.Debug("storage: closing a watch that fell behind the retained history", "prefix", w.prefix)
			return
		}
		whole := w.prefix == h.cfg.Root
		for i := range w.batch {
			c := &w.batch[i]
			if c.Rev <= w.after || (!whole && !strings.HasPrefix(c.rec.key, w.prefix)) {
				continue
			}
			w.pos = first + uint64(i)
			if !w.emit(c) {
				if w.isLagged() {
					h.cfg.Logger.Debug("storage: closing a watch whose consumer does not keep up", "prefix", w.prefix)
				}
				return
			}
		}
		clear(w.batch) // hold no value longer than needed
		if !caughtUp {
			continue
		}
		if !w.maybeBookmark(seen, gen, deadlineBookmark) {
			return
		}
		deadlineBookmark = false
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

// maybeBookmark sends the Bookmark at seen that a tick (gen), the deadline
// or a progress request asks for, now that every change up to seen has
// been sent. A periodic or deadline bookmark is sent once per revision; a
// requested one always. It reports false when the watch must end.
func (w *Watcher[V]) maybeBookmark(seen int64, gen uint64, deadline bool) bool {
	pr := w.progress.Load()
	// A newer request, come meanwhile, stays for the next round.
	requested := pr > 0 && seen >= pr && w.progress.CompareAndSwap(pr, 0)
	periodic := w.bookmarks && (gen != w.gen || deadline)
	if periodic {
		w.gen = gen
	}
	switch {
	case seen < w.after:
		// A watch from a revision the history has not reached: nothing
		// it has seen is worth a bookmark yet.
		return true
	case requested || (periodic && seen > w.lastBookmark):
		w.lastBookmark = seen
		return w.send(storage.Event{Type: storage.Bookmark, Revision: seen})
	}
	return true
}

// sendInitial sends the snapshot taken when the watch started as Added
// events, then the Bookmark that ends them when asked.
func (w *Watcher[V]) sendInitial() bool {
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
func (w *Watcher[V]) emit(c *Change[V]) bool {
	ev := c.Event()
	if !w.pred.Empty() {
		var ok bool
		var err error
		if ev, ok, err = w.filter(c, ev); err != nil {
			w.send(storage.Event{Type: storage.ErrorEvent, Err: fmt.Errorf("watch of %q: filtering %q: %w", w.prefix, c.rec.key, err)})
			return false
		} else if !ok {
			return true
		}
	}
	return w.sendChange(ev)
}

// filter is storage.Predicate.FilterEvent with the memos of both versions,
// so that the attributes of neither are decoded again: an object that
// starts matching is Added, one that stops matching is Deleted.
func (w *Watcher[V]) filter(c *Change[V], ev storage.Event) (storage.Event, bool, error) {
	switch c.kind() {
	case added:
		ok, err := w.pred.Matches(c.Cur.Data(), c.Cur.Memo())
		return ev, ok, err
	case deleted:
		ok, err := w.pred.Matches(c.Prev.Data(), c.Prev.Memo())
		return ev, ok, err
	}
	cur, err := w.pred.Matches(c.Cur.Data(), c.Cur.Memo())
	if err != nil {
		return ev, false, err
	}
	prev, err := w.pred.Matches(c.Prev.Data(), c.Prev.Memo())
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
		return storage.Event{Type: storage.Deleted, Key: c.rec.key, Value: c.Prev.Data(), Revision: c.Rev}, true, nil
	}
	return ev, false, nil
}

// sendChange sends the change at w.pos. While the consumer leaves the
// channel full, the watcher is registered as stalled: once that lasted
// StallBudget, it is closed if it is too far behind, then or at a later
// change (see closeLaggingLocked). The cost is on the stalled watcher; a
// change pays one length check when none stalls.
func (w *Watcher[V]) sendChange(ev storage.Event) bool {
	select {
	case w.out <- ev:
		return true
	default:
	}
	h := w.h
	if h.cfg.LagBound == 0 {
		return w.send(ev)
	}
	h.Lock()
	registered := h.epoch == w.epoch
	if registered {
		w.stalledAt = h.Now()
		h.stalled[w] = struct{}{}
	}
	h.Unlock()
	if !registered {
		return w.send(ev)
	}
	budget := time.NewTimer(StallBudget)
	defer budget.Stop()
	for {
		select {
		case w.out <- ev:
			h.Lock()
			delete(h.stalled, w)
			h.Unlock()
			return true
		case <-budget.C:
			// No change came to close it: check now.
			h.Lock()
			if _, ok := h.stalled[w]; ok {
				h.closeLaggingLocked(h.Now())
			}
			h.Unlock()
		case <-w.lagged:
			return false
		case <-w.stop:
			return false
		case <-w.ctx.Done():
			return false
		}
	}
}

// closeLaggingLocked closes the watchers stalled for StallBudget by now
// and more than LagBound changes behind, as kube-apiserver's watch cache
// closes a watcher whose buffer stays full: without an error, while the
// change they wait to send is still in the log, so that their client
// resumes from the last revision it got instead of listing again. The
// caller holds the lock for writing.
func (h *History[V]) closeLaggingLocked(now int64) {
	next := h.firstSeq + uint64(len(h.log))
	for w := range h.stalled {
		if next-w.pos > h.cfg.LagBound && now-w.stalledAt >= int64(StallBudget) {
			delete(h.stalled, w)
			close(w.lagged)
		}
	}
}

func (w *Watcher[V]) isLagged() bool {
	select {
	case <-w.lagged:
		return true
	default:
		return false
	}
}

func (w *Watcher[V]) send(ev storage.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-w.stop:
		return false
	case <-w.ctx.Done():
		return false
	}
}
