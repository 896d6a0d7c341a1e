package etcd3

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/apikit-dev/apikit/storage"
)

// initialPage is the range size used to read the initial state of a watch.
const initialPage = 1000

type watcher struct {
	s      *store
	ctx    context.Context
	cancel context.CancelFunc
	prefix string
	opts   storage.WatchOptions
	// via carries the watch; fell is closed when its member fails (nil:
	// never, see watchVia).
	via  clientv3.Watcher
	fell <-chan struct{}

	out  chan storage.Event
	done chan struct{}
	once sync.Once
	// progress is set by RequestProgress until a progress notification
	// answers it.
	progress atomic.Bool
}

var _ storage.ProgressRequester = (*watcher)(nil)

// ResultChan implements storage.Watcher.
func (w *watcher) ResultChan() <-chan storage.Event { return w.out }

// Stop implements storage.Watcher. It returns once the channel is closed.
func (w *watcher) Stop() {
	w.once.Do(w.cancel)
	<-w.done
}

// RequestProgress implements storage.ProgressRequester: it asks etcd for a
// progress notification on the watch's stream (the client shares one stream
// among watches with the same context metadata, and etcd answers each of
// them), which the watch reports as a Bookmark.
func (w *watcher) RequestProgress(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.progress.Store(true)
	// The request must name the stream of this watch: w.ctx carries its
	// metadata. Before the stream exists (while the initial events are
	// read) the client drops the request; the flag stays set, and the next
	// notification answers it.
	if err := w.via.RequestProgress(w.ctx); err != nil && w.ctx.Err() == nil {
		return storage.NewUnavailable(fmt.Errorf("etcd3: requesting watch progress: %w", err))
	}
	return nil
}

// streamKey is the gRPC metadata key that puts watches from a past
// revision on their own etcd watch stream, apart from watches that start
// at etcd's current revision (a watch cache's, which start with their
// state).
//
// The client carries every watch with the same metadata on one stream,
// and etcd answers a progress request on a stream only when every watch on
// it has caught up. A watch from a past revision has not: etcd catches it
// up every 100 ms. A server's start makes many (its informers watch from
// their lists' revisions while the watch caches are not ready, so the
// caches delegate those watches to etcd), and on a shared stream each
// would hold back the progress notifications that the watch caches'
// consistent reads wait for, the whole server's readiness with them. A
// watch that starts at the current revision is caught up from its start,
// so the watch caches' stream answers at once.
const (
	streamKey  = "apikit-watch-stream"
	pastStream = "from-revision"
)

// Watch implements storage.Interface. A watch from a past revision
// (Revision without SendInitialEvents) goes on a stream of its own kind;
// see streamKey.
func (s *store) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.Watcher, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.SendInitialEvents && opts.Revision > 0 {
		// The state sent is not older than the revision: wait for etcd
		// to reach it, as a list would.
		if err := s.waitForRevision(ctx, opts.Revision); err != nil {
			return nil, err
		}
	}
	// WithRequireLeader makes etcd end the watch when its member loses the
	// leader, instead of leaving it silently stale.
	wctx := clientv3.WithRequireLeader(ctx)
	if !opts.SendInitialEvents && opts.Revision > 0 {
		wctx = metadata.AppendToOutgoingContext(wctx, streamKey, pastStream)
	}
	wctx, cancel := context.WithCancel(wctx)
	via, fell := s.watchVia()
	w := &watcher{
		via:    via,
		fell:   fell,
		s:      s,
		ctx:    wctx,
		cancel: cancel,
		prefix: storage.ListPrefix(prefix),
		opts:   opts,
		out:    make(chan storage.Event, 32),
		done:   make(chan struct{}),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		return nil, storage.NewUnavailable(errors.New("etcd3: store is closed"))
	}
	s.watchers[w] = struct{}{}
	s.mu.Unlock()
	go w.run()
	return w, nil
}

func (w *watcher) run() {
	defer close(w.done)
	defer close(w.out)
	defer func() {
		w.s.mu.Lock()
		delete(w.s.watchers, w)
		w.s.mu.Unlock()
	}()
	defer w.cancel()

	// The etcd watch ends when the member carrying it fails: a frozen
	// member would hold it, and clientv3's Watch, which waits for the
	// member to confirm the watch, as long as the freeze.
	etcdCtx, stopEtcd := context.WithCancel(w.ctx)
	defer stopEtcd()
	if w.fell != nil {
		go func() {
			select {
			case <-w.fell:
				stopEtcd()
			case <-etcdCtx.Done():
			}
		}()
	}

	full := w.s.full(w.prefix)
	from := w.opts.Revision
	initial := from == 0 || w.opts.SendInitialEvents
	var wch clientv3.WatchChan
	if initial {
		// The current state, then what follows (with SendInitialEvents,
		// the revision only says how old the state may not be, which
		// Watch waited for). The etcd watch starts first, from etcd's
		// current revision, which its created response names; the state
		// is then read at that revision. Reading first and watching from
		// the read's revision would start the watch in the past as soon
		// as anything was written meanwhile (a server's start writes a
		// lot), and etcd catches such a watch up only every 100 ms,
		// answering no progress request on its stream until then.
		wch = w.via.Watch(etcdCtx, full, clientv3.WithPrefix(), clientv3.WithPrevKV(),
			clientv3.WithProgressNotify(), clientv3.WithCreatedNotify())
		rev, ok := w.created(wch)
		if !ok {
			return
		}
		if rev, ok = w.sendInitial(rev); !ok {
			return
		}
		if w.opts.SendInitialEvents && !w.send(storage.Event{Type: storage.Bookmark, Revision: rev, InitialEventsEnd: true}) {
			return
		}
		from = rev
	} else {
		wch = w.via.Watch(etcdCtx, full, clientv3.WithPrefix(), clientv3.WithRev(from+1),
			clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	}
	var tick <-chan time.Time
	if w.opts.Bookmarks {
		t := time.NewTicker(w.s.bookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	// seen is the revision up to which this watch has delivered
	// everything; bookmarked the last one it reported in a Bookmark.
	seen, bookmarked := from, int64(0)
	bookmark := func(requested bool) bool {
		if (!w.opts.Bookmarks && !requested) || seen <= bookmarked {
			return true
		}
		bookmarked = seen
		return w.send(storage.Event{Type: storage.Bookmark, Revision: seen})
	}
	for {
		select {
		case resp, ok := <-wch:
			if !ok {
				w.closed()
				return
			}
			if err := resp.Err(); err != nil {
				w.send(storage.Event{Type: storage.ErrorEvent, Err: w.watchErr(from, resp)})
				return
			}
			if resp.IsProgressNotify() {
				// A progress notification says the stream has delivered
				// everything up to its header's revision.
				seen = max(seen, resp.Header.Revision)
				if !bookmark(w.progress.Swap(false)) {
					return
				}
				continue
			}
			for _, e := range resp.Events {
				if e.Kv.ModRevision <= from {
					continue // in the initial state already
				}
				if !w.emit(w.event(e)) {
					return
				}
				seen = max(seen, e.Kv.ModRevision)
			}
		case <-w.fell:
			w.memberFailed()
			return
		case <-tick:
			// etcd answers a progress request only when every watch on the
			// stream has caught up, and never before a watch's start
			// revision exists; meanwhile the revision this watch knows it
			// has delivered up to makes a correct, if older, bookmark.
			if !bookmark(false) {
				return
			}
			// The request goes to the stream this watch shares with the
			// client's other watches; every watch on it gets the answer,
			// which is harmless.
			if err := w.via.RequestProgress(w.ctx); err != nil && w.ctx.Err() == nil {
				w.send(storage.Event{Type: storage.ErrorEvent,
					Err: storage.NewUnavailable(fmt.Errorf("etcd3: requesting watch progress: %w", err))})
				return
			}
		case <-w.ctx.Done():
			return
		}
	}
}

// created waits for the created response of a watch started without a
// revision and returns the revision it names: the watch delivers every
// change after it.
func (w *watcher) created(wch clientv3.WatchChan) (int64, bool) {
	select {
	case resp, ok := <-wch:
		switch {
		case !ok:
			w.closed()
			return 0, false
		case resp.Err() != nil:
			w.send(storage.Event{Type: storage.ErrorEvent, Err: w.watchErr(0, resp)})
			return 0, false
		case !resp.Created:
			w.send(storage.Event{Type: storage.ErrorEvent,
				Err: storage.NewUnavailable(fmt.Errorf("etcd3: watch of %q: etcd sent events before it confirmed the watch", w.prefix))})
			return 0, false
		}
		return resp.Header.Revision, true
	case <-w.fell:
		w.memberFailed()
		return 0, false
	case <-w.ctx.Done():
		return 0, false
	}
}

// memberFailed ends a watch whose member failed: its consumer resumes it
// from the last revision it saw, on another member.
func (w *watcher) memberFailed() {
	w.send(storage.Event{Type: storage.ErrorEvent,
		Err: storage.NewUnavailable(fmt.Errorf("etcd3: watch of %q: its etcd member failed", w.prefix))})
}

// closed ends a watch whose etcd watch channel closed: the consumer
// stopped it, its member failed, or the client ended it.
func (w *watcher) closed() {
	if w.ctx.Err() != nil {
		return
	}
	select {
	case <-w.fell:
		w.memberFailed()
	default:
		w.send(storage.Event{Type: storage.ErrorEvent,
			Err: storage.NewUnavailable(fmt.Errorf("etcd3: watch of %q ended by the client", w.prefix))})
	}
}

func (w *watcher) watchErr(from int64, resp clientv3.WatchResponse) error {
	if resp.CompactRevision != 0 {
		return storage.NewExpired(from, resp.CompactRevision)
	}
	return storage.NewUnavailable(fmt.Errorf("etcd3: watch of %q: %w", w.prefix, resp.Err()))
}

// sendInitial sends the objects under the prefix at rev (0: the latest) as
// Added events and returns the revision they were read at.
func (w *watcher) sendInitial(rev int64) (int64, bool) {
	full := w.s.full(w.prefix)
	end := clientv3.GetPrefixRangeEnd(full)
	key := full
	for {
		ropts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(initialPage)}
		if rev > 0 {
			ropts = append(ropts, clientv3.WithRev(rev))
		}
		var resp *clientv3.GetResponse
		err := w.s.call(w.ctx, false, func(ctx context.Context, kv clientv3.KV, _ bool) (err error) {
			resp, err = kv.Get(ctx, key, ropts...)
			return err
		})
		if err != nil {
			if w.ctx.Err() == nil {
				w.send(storage.Event{Type: storage.ErrorEvent, Err: w.s.mapErr(w.ctx, "watch", w.prefix, rev, err)})
			}
			return 0, false
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, e := range resp.Kvs {
			ev := storage.Event{Type: storage.Added, Key: w.s.short(e.Key), Value: e.Value, Revision: e.ModRevision}
			if !w.emit(ev) {
				return 0, false
			}
		}
		if !resp.More {
			return rev, true
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

func (w *watcher) event(e *clientv3.Event) storage.Event {
	key := w.s.short(e.Kv.Key)
	switch {
	case e.Type == mvccpb.DELETE:
		ev := storage.Event{Type: storage.Deleted, Key: key, Revision: e.Kv.ModRevision}
		if e.PrevKv != nil {
			ev.Value = e.PrevKv.Value
		}
		return ev
	case e.IsCreate():
		return storage.Event{Type: storage.Added, Key: key, Value: e.Kv.Value, Revision: e.Kv.ModRevision}
	default:
		ev := storage.Event{Type: storage.Modified, Key: key, Value: e.Kv.Value, Revision: e.Kv.ModRevision}
		if e.PrevKv != nil {
			ev.PrevValue = e.PrevKv.Value
		}
		return ev
	}
}

// emit applies the predicate and sends what the consumer must see.
func (w *watcher) emit(ev storage.Event) bool {
	out, ok, err := w.opts.Predicate.FilterEvent(ev)
	if err != nil {
		w.send(storage.Event{Type: storage.ErrorEvent, Err: fmt.Errorf("etcd3: watch of %q: filtering %q: %w", w.prefix, ev.Key, err)})
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
	case <-w.ctx.Done():
		return false
	}
}
