package cacher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/internal/history"
)

// Defaults of the options.
const (
	// DefaultBookmarkInterval is how often a watch that asked for bookmarks
	// gets one, as kube-apiserver sends them.
	DefaultBookmarkInterval = time.Minute
	// DefaultMaxRevisionWait is how long a read of a revision the cache has
	// not reached waits for it, as kube-apiserver's watch cache does.
	DefaultMaxRevisionWait = 3 * time.Second
)

// The dynamic window, kube-apiserver's: at least minDynamicCapacity changes,
// at most maxDynamicCapacity, and otherwise every change of the last
// eventFreshDuration.
const (
	minDynamicCapacity = 100
	maxDynamicCapacity = 100 * 1024
	eventFreshDuration = 75 * time.Second
)

// Backoff between two backend watches when one fails.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// While a consistent read waits, the backend is asked for progress again
// after firstProgressRetry, then after twice as long each time, up to
// every progressRetry: etcd answers a progress request only when every
// watch on the stream has caught up, and drops it otherwise, which is
// common just after the watches start (a server's start).
const (
	firstProgressRetry = 5 * time.Millisecond
	progressRetry      = 100 * time.Millisecond
)

// Option configures a Cacher.
type Option func(*config)

type config struct {
	capacity         int
	bookmarkInterval time.Duration
	maxRevisionWait  time.Duration
	logger           *slog.Logger
	metrics          *metrics.Registry
	resource         meta.GroupResource
}

// WithCapacity sets the window: how many changes the cache keeps for
// watches that resume from a revision and for reads at older revisions.
// Zero (the default) sizes it dynamically, as kube-apiserver does: every
// change of the last 75 seconds, at least 100 and at most 102400.
func WithCapacity(n int) Option {
	return func(c *config) {
		if n >= 0 {
			c.capacity = n
		}
	}
}

// WithBookmarkInterval sets how often watches that ask for bookmarks get
// one.
func WithBookmarkInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.bookmarkInterval = d
		}
	}
}

// WithMaxRevisionWait sets how long a read of a revision the cache has not
// reached waits for it before it is served by the backend or fails with
// ErrTooLargeResourceVersion.
func WithMaxRevisionWait(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.maxRevisionWait = d
		}
	}
}

// WithMetrics records the cache's figures (apiserver_watch_cache_*,
// apiserver_cache_list_*, watch_cache_capacity) in m, under the resource
// a Factory makes the cache for.
func WithMetrics(m *metrics.Registry) Option {
	return func(c *config) { c.metrics = m }
}

// forResource names the resource a cache holds, for its metrics.
func forResource(gr meta.GroupResource) Option {
	return func(c *config) { c.resource = gr }
}

// WithLogger sets where the cacher reports backend watch failures; the
// default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// Cacher is a watch cache in front of a storage.Interface for the keys
// under one prefix: see the package documentation. The zero value is not
// usable; call New.
type Cacher struct {
	backend storage.Interface
	root    string
	cfg     config

	// ctx ends at Close; wg counts the goroutines the cacher owns (not
	// those of its watchers, which Close stops one by one).
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// h holds the state at every revision of the window and the window's
	// changes, and serves the watches. It is ready while the cache holds a
	// complete state: reads are served by the backend before (and while a
	// lost backend watch is replaced by a new list).
	h       *history.History[*value]
	readyCh chan struct{} // closed when first ready
	// fresh is how long a dynamic window keeps changes; tests shorten it.
	// Guarded by h's lock.
	fresh time.Duration

	// backendWatch is the running backend watch, when it can be asked for
	// progress.
	bwMu         sync.Mutex
	backendWatch storage.ProgressRequester

	// Consistent reads that wait for the cache poke progressReq; the
	// progress loop asks the backend for progress while any waits.
	progressReq chan struct{}

	// Quorum reads of the backend's revision are shared: a caller joins
	// revNext, the read that starts after the running one. The goroutine
	// that runs them (revisionLoop) runs only while some are asked for
	// (revRunning): an idle server has a cache per resource, and a
	// goroutine parked in each. revClosed, set by Close, starts no more.
	revMu      sync.Mutex
	revNext    *revCall
	revRunning bool
	revClosed  bool

	// written is the newest revision a write of a cached key through the
	// cache returned: reads not older than a revision wait for it too, so
	// that a client reads its own writes.
	written atomic.Int64

	// delegated counts the reads the backend served.
	delegated atomic.Int64

	// metrics records the cache's figures; nil records nothing.
	metrics *metrics.WatchCache
}

var (
	_ storage.Interface = (*Cacher)(nil)
	_ storage.Rooted    = (*Cacher)(nil)
)

// New starts a cache of the keys under prefix (which gets a trailing "/")
// in backend: a goroutine lists and watches them and keeps the cache
// current until Close. Reads are served by the backend until the first list
// is in (see Ready). Keys outside prefix are served by the backend too.
// Close does not close backend.
func New(backend storage.Interface, prefix string, opts ...Option) *Cacher {
	cfg := config{
		bookmarkInterval: DefaultBookmarkInterval,
		maxRevisionWait:  DefaultMaxRevisionWait,
		logger:           slog.Default(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cacher{
		backend: backend,
		root:    prefix,
		cfg:     cfg,
		ctx:     ctx,
		cancel:  cancel,
		h: history.New[*value](history.Config{
			Root:             prefix,
			BookmarkInterval: cfg.bookmarkInterval,
			LagBound:         lagBound(cfg.capacity),
			OutBuffer:        outBuffer,
			Logger:           cfg.logger,
			Timestamps:       cfg.capacity == 0, // the dynamic window ages changes
		}),
		readyCh:     make(chan struct{}),
		fresh:       eventFreshDuration,
		progressReq: make(chan struct{}, 1),
	}
	if cfg.metrics != nil && cfg.resource.Resource != "" {
		c.metrics = cfg.metrics.WatchCacheOf(cfg.resource.Group, cfg.resource.Resource)
		c.metrics.Capacity(cfg.capacity)
	}
	// Two goroutines per cache: the backend watch, and the loop that asks
	// for progress and ages the window (revisionLoop runs on demand).
	c.wg.Add(2)
	go c.run()
	go c.progressLoop()
	return c
}

// Prefix returns the prefix whose keys the cache holds.
func (c *Cacher) Prefix() string { return c.root }

// KeyRoot implements storage.Rooted: the prefix without its trailing "/".
// A registry store given the cache keeps its objects under it.
func (c *Cacher) KeyRoot() string { return strings.TrimSuffix(c.root, "/") }

// Ready reports whether the cache holds a complete state and serves reads.
func (c *Cacher) Ready() bool { return c.h.Ready() }

// WaitReady returns when the cache first holds a complete state, or with
// ctx's error.
func (c *Cacher) WaitReady(ctx context.Context) error {
	select {
	case <-c.readyCh:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the watch cache of %q: %w", c.root, ctx.Err())
	case <-c.ctx.Done():
		return errClosed()
	}
}

func errClosed() error { return storage.NewUnavailable(errors.New("watch cache is closed")) }

// Close stops the cache and ends its watches; later calls fail with
// ErrUnavailable. It leaves the backend open.
func (c *Cacher) Close() error {
	c.cancel()
	c.h.Close()
	// No revisionLoop starts after this: wg.Add happens before Wait.
	c.revMu.Lock()
	c.revClosed = true
	c.revMu.Unlock()
	c.wg.Wait()
	return nil
}

func (c *Cacher) isClosed() bool { return c.ctx.Err() != nil }

// covers reports whether key (or a prefix ending in "/") is in the cache.
func (c *Cacher) covers(key string) bool { return strings.HasPrefix(key, c.root) }

// run keeps one backend watch going: the first starts with the state as
// initial events (a consistent list), later ones resume from the revision
// the cache has seen; when the backend no longer has that revision, the
// cache lists again.
func (c *Cacher) run() {
	defer c.wg.Done()
	backoff := minBackoff
	for {
		progressed, err := c.watchOnce()
		if c.ctx.Err() != nil {
			return
		}
		if progressed {
			backoff = minBackoff
		}
		c.cfg.logger.Warn("watch cache: backend watch ended; watching again", "prefix", c.root, "err", err, "after", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// watchOnce runs one backend watch until it ends; progressed reports
// whether it delivered anything.
func (c *Cacher) watchOnce() (progressed bool, err error) {
	opts := storage.WatchOptions{Bookmarks: true}
	initializing := !c.h.Ready()
	if initializing {
		opts.SendInitialEvents = true
	} else {
		opts.Revision = c.h.Revision()
	}
	w, err := c.backend.Watch(c.ctx, c.root, opts)
	if err != nil {
		if errors.Is(err, storage.ErrExpired) {
			c.reset(err)
		}
		return false, fmt.Errorf("starting the backend watch: %w", err)
	}
	defer w.Stop()
	if pr, ok := w.(storage.ProgressRequester); ok {
		c.bwMu.Lock()
		c.backendWatch = pr
		c.bwMu.Unlock()
		defer func() {
			c.bwMu.Lock()
			c.backendWatch = nil
			c.bwMu.Unlock()
		}()
	}
	var init *history.State[*value]
	if initializing {
		init = history.NewState[*value]()
	}
	for ev := range w.ResultChan() {
		switch {
		case ev.Type == storage.ErrorEvent:
			if errors.Is(ev.Err, storage.ErrExpired) {
				c.reset(ev.Err)
			}
			return progressed, ev.Err
		case init != nil:
			switch {
			case ev.Type == storage.Added:
				init.Add(ev.Key, ev.Revision, newValue(ev, false))
			case ev.Type == storage.Bookmark && ev.InitialEventsEnd:
				c.metrics.Initialized(ev.Revision)
				if c.h.Install(init, ev.Revision) {
					close(c.readyCh)
				}
				init = nil
				progressed = true
			case ev.Type == storage.Bookmark:
			default:
				return progressed, fmt.Errorf("backend sent %s %q among the initial events", ev.Type, ev.Key)
			}
		default:
			// Counted before the change is visible, so that whoever sees
			// it sees it counted.
			if ev.Type == storage.Bookmark {
				c.metrics.Revision(ev.Revision)
			} else {
				c.metrics.Received(ev.Revision)
			}
			c.apply(ev)
			progressed = true
		}
	}
	return progressed, errors.New("the backend closed the watch")
}

// reset drops the cache's state when the backend cannot resume its watch:
// reads go to the backend until a new list is in, and every watcher ends
// with ErrExpired, so that its client lists again.
func (c *Cacher) reset(err error) {
	if c.h.Reset(errReinitialized()) {
		c.cfg.logger.Warn("watch cache: the backend lost the cache's revision; listing again", "prefix", c.root, "revision", c.h.Revision(), "err", err)
	}
}

func errReinitialized() error {
	return &storage.Error{Code: storage.CodeExpired,
		Message: "the watch cache lost its history and listed again: list and watch again"}
}

// apply adds one change from the backend watch.
func (c *Cacher) apply(ev storage.Event) {
	c.h.Lock()
	defer c.h.Unlock()
	switch ev.Type {
	case storage.Added, storage.Modified:
		c.h.PutLocked(ev.Key, ev.Revision, newValue(ev, false), false)
	case storage.Deleted:
		// The tombstone's memo is the Deleted event's (see
		// storage.Event.Memo).
		c.h.PutLocked(ev.Key, ev.Revision, newValue(ev, true), true)
	case storage.Bookmark:
		c.h.AdvanceLocked(ev.Revision)
		return
	default:
		return
	}
	c.evictLocked(c.h.Now())
}

// lagBound is how many changes behind a stalled watcher may fall before it
// is closed: well inside the window, so that the change it waits to send,
// and the revision its client resumes from, are still there when the client
// watches again. A dynamic window keeps every change of the last 75
// seconds: a watcher closed dynamicLagBound behind has that long to resume.
func lagBound(capacity int) uint64 {
	if capacity == 0 {
		return dynamicLagBound
	}
	return uint64(max(capacity/4, 1))
}

// dynamicLagBound is lagBound with a dynamic window: kube-apiserver's
// largest watcher buffer.
const dynamicLagBound = 1000

// evictLocked drops the oldest changes the window no longer keeps, at time
// now (nanoseconds since the history started), and the history only they
// needed.
func (c *Cacher) evictLocked(now int64) {
	capacity, fresh := c.cfg.capacity, int64(c.fresh)
	c.h.EvictLocked(func(e *history.Change[*value], size int) bool {
		if capacity > 0 {
			return size > capacity
		}
		return size > maxDynamicCapacity || (size > minDynamicCapacity && now-e.At() > fresh)
	}, 0)
}

// Compact discards the cache's history before rev, as a backend compaction
// does: afterwards reads at older revisions are served by the backend
// (which fails them with ErrExpired once it has compacted too), and new
// watches from revisions whose later changes are gone fail with
// ErrExpired; running watches keep the changes they have not read yet. It
// waits for the cache to reach rev first.
//
// The cache does not need it: its window is its own history. It is for
// callers that compact the backend and want the cache to agree, such as
// the storagetest suite.
func (c *Cacher) Compact(ctx context.Context, rev int64) error {
	if c.isClosed() {
		return errClosed()
	}
	if !c.h.Ready() {
		return nil // nothing cached
	}
	if delegate, err := c.sync(ctx, rev, false); err != nil {
		return err
	} else if delegate {
		return storage.NewUnavailable(fmt.Errorf("watch cache of %q did not reach revision %d to compact", c.root, rev))
	}
	c.h.Lock()
	defer c.h.Unlock()
	c.h.CompactLocked(rev)
	return nil
}
