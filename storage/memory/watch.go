package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/storage"
)

// watcher is one watch. Writers push events onto its queue without
// blocking; its goroutine filters them and hands them to the consumer.
type watcher struct {
	s         *Store
	ctx       context.Context
	prefix    string
	pred      storage.Predicate
	bookmarks bool
	// initial are the events that precede the live ones: the state at the
	// start revision and the history replayed since.
	initial []storage.Event
	// after is the revision up to which initial covers everything; live
	// events at or before it are skipped.
	after int64

	mu         sync.Mutex
	queue      []storage.Event
	spare      []storage.Event // the goroutine's other queue buffer
	overflowed bool
	progress   bool // RequestProgress asked for a Bookmark
	notify     chan struct{}

	out      chan storage.Event
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// ResultChan implements storage.Watcher.
func (w *watcher) ResultChan() <-chan storage.Event { return w.out }

// Stop implements storage.Watcher. It returns once the channel is closed.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

var _ storage.ProgressRequester = (*watcher)(nil)

// RequestProgress implements storage.ProgressRequester: the watch sends a
// Bookmark at the store's revision once its queue is empty.
func (w *watcher) RequestProgress(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	w.progress = true
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
	return nil
}

// Watch implements storage.Interface.
func (s *Store) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.Watcher, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	prefix = storage.ListPrefix(prefix)
	if opts.SendInitialEvents && opts.Revision > 0 {
		// The state sent is not older than the revision: wait for the
		// store to reach it, as a list would.
		if err := s.waitForRevision(ctx, opts.Revision); err != nil {
			return nil, err
		}
	}
	w := &watcher{
		s:         s,
		ctx:       ctx,
		prefix:    prefix,
		pred:      opts.Predicate,
		bookmarks: opts.Bookmarks,
		notify:    make(chan struct{}, 1),
		out:       make(chan storage.Event, 32),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}

	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, errClosed()
	}
	from := opts.Revision
	// The changes after from need history from from+1, as etcd counts.
	// Initial events are the current state: they need no history.
	expired := from > 0 && !opts.SendInitialEvents && from+1 < s.compacted
	switch {
	case from == 0 || opts.SendInitialEvents:
		w.initial = s.snapshot(prefix, s.rev)
		if opts.SendInitialEvents {
			w.initial = append(w.initial, storage.Event{Type: storage.Bookmark, Revision: s.rev, InitialEventsEnd: true})
		}
		w.after = s.rev
	case expired:
		w.initial = []storage.Event{{Type: storage.ErrorEvent, Err: storage.NewExpired(from, s.compacted)}}
	default:
		for i := max(from+1-s.logStart, 0); i < int64(len(s.log)); i++ {
			if c := &s.log[i]; strings.HasPrefix(c.key, prefix) {
				w.initial = append(w.initial, c.event())
			}
		}
		w.after = max(from, s.rev)
	}
	if !expired {
		s.wmu.Lock()
		set := s.watchers[prefix]
		if set == nil {
			set = map[*watcher]struct{}{}
			s.watchers[prefix] = set
		}
		set[w] = struct{}{}
		s.nwatchers.Add(1)
		s.wmu.Unlock()
	}
	s.mu.RUnlock()

	go w.run()
	return w, nil
}

// snapshot returns the objects under prefix at rev as Added events. The
// caller holds s.mu.
func (s *Store) snapshot(prefix string, rev int64) []storage.Event {
	var evs []storage.Event
	for rec := range s.keys.From(prefix) {
		if !strings.HasPrefix(rec.key, prefix) {
			break
		}
		if v, ok := rec.at(rev); ok {
			evs = append(evs, storage.Event{Type: storage.Added, Key: rec.key, Value: v.value, Memo: v.memo, Revision: v.rev})
		}
	}
	return evs
}

// notify hands a write to the watchers of every prefix of its key. The
// caller holds s.mu, so watchers see writes in revision order.
func (s *Store) notify(c *change) {
	ev := c.event()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for i := 0; i < len(c.key); i++ {
		if c.key[i] != '/' {
			continue
		}
		for w := range s.watchers[c.key[:i+1]] {
			w.push(ev)
		}
	}
}

func (s *Store) removeWatcher(w *watcher) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	set := s.watchers[w.prefix]
	if _, ok := set[w]; !ok {
		return
	}
	delete(set, w)
	if len(set) == 0 {
		delete(s.watchers, w.prefix)
	}
	s.nwatchers.Add(-1)
}

// push queues ev without blocking. A watcher whose queue is full is marked
// overflowed and closed: writers never wait for a slow consumer.
func (w *watcher) push(ev storage.Event) {
	w.mu.Lock()
	switch {
	case w.overflowed:
		w.mu.Unlock()
		return
	case len(w.queue) >= w.s.cfg.watchBuffer:
		w.overflowed = true
		w.queue = nil
	default:
		w.queue = append(w.queue, ev)
	}
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *watcher) run() {
	defer close(w.done)
	defer close(w.out)
	defer w.s.removeWatcher(w)

	for i, ev := range w.initial {
		w.initial[i] = storage.Event{} // let the consumer's copy be the only one
		if !w.emit(ev) || ev.Type == storage.ErrorEvent {
			return
		}
	}
	w.initial = nil

	var tick, due <-chan time.Time // due: the bookmark before the deadline
	if w.bookmarks {
		t := time.NewTicker(w.s.cfg.bookmarkInterval)
		defer t.Stop()
		tick = t.C
		var stop func()
		due, stop = storage.DeadlineBookmark(w.ctx)
		defer stop()
	}
	for {
		select {
		case <-w.notify:
			w.mu.Lock()
			q, overflowed, progress := w.queue, w.overflowed, w.progress
			w.queue, w.progress = w.spare[:0], false
			w.mu.Unlock()
			if overflowed {
				// Closed without an error, as kube-apiserver's watch
				// cache closes a watcher that does not keep up: its
				// client watches again from the last revision it got.
				return
			}
			for i, ev := range q {
				q[i] = storage.Event{}
				if ev.Revision <= w.after {
					continue
				}
				if !w.emit(ev) {
					return
				}
			}
			w.spare = q[:0]
			if progress {
				sent, ok := w.bookmark()
				if !ok {
					return
				}
				if !sent {
					// Events came meanwhile and notified again: answer
					// after them.
					w.mu.Lock()
					w.progress = true
					w.mu.Unlock()
				}
			}
		case <-tick:
			if _, ok := w.bookmark(); !ok {
				return
			}
		case <-due:
			due = nil
			if _, ok := w.bookmark(); !ok {
				return
			}
		case <-w.stop:
			return
		case <-w.ctx.Done():
			return
		}
	}
}

// bookmark sends a Bookmark at the store's revision if every event up to
// it has been delivered, and reports whether it did; ok is false when the
// watch must end.
func (w *watcher) bookmark() (sent, ok bool) {
	w.s.mu.RLock()
	rev := w.s.rev
	w.mu.Lock()
	pending := len(w.queue) > 0 || w.overflowed
	w.mu.Unlock()
	w.s.mu.RUnlock()
	if pending || rev < w.after {
		return false, true // the queued events come first; the next tick will do
	}
	return true, w.send(storage.Event{Type: storage.Bookmark, Revision: rev})
}

// emit applies the predicate and sends what the consumer must see.
func (w *watcher) emit(ev storage.Event) bool {
	out, ok, err := w.pred.FilterEvent(ev)
	if err != nil {
		w.send(storage.Event{Type: storage.ErrorEvent, Err: fmt.Errorf("watch of %q: filtering %q: %w", w.prefix, ev.Key, err)})
		return false
	}
	if !ok {
		return true
	}
	return w.send(out)
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
