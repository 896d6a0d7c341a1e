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

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/internal/keyindex"
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
	// fresh is how long a dynamic window keeps changes; tests shorten it.
	fresh time.Duration
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
	start   time.Time

	// ctx ends at Close; wg counts the goroutines the cacher owns (not
	// those of its watchers, which Close stops one by one).
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// ready is true while the cache holds a complete state: reads are
	// served by the backend before (and while a lost backend watch is
	// replaced by a new list).
	ready   atomic.Bool
	readyCh chan struct{} // closed when first ready
	// rev mirrors the revision the cache has seen everything up to, for
	// checks without the lock.
	rev atomic.Int64

	mu sync.RWMutex
	// records and index hold every key with history in the window.
	records map[string]*record
	index   *keyindex.Index[*record]
	// live counts the keys that exist at the latest revision.
	live int
	// events is the window, oldest first; events[0] has sequence number
	// firstSeq. Watchers read it by sequence number.
	events   []event
	firstSeq uint64
	// seen is the revision the cache has seen everything up to.
	seen int64
	// floor is the oldest revision whose state the cache can serve;
	// watchFloor the oldest revision a watch can start from (every later
	// change is in the window). floor >= watchFloor.
	floor, watchFloor int64
	// compactTo evicts changes older than it, whatever the capacity.
	compactTo int64
	// epoch counts the times the state was replaced by a new list:
	// watchers of an older epoch are ended.
	epoch uint64
	// revWake is closed (and replaced) when seen moves.
	revWake chan struct{}
	// wakes are what the watchers of each prefix wait on.
	wakes map[string]*wakeGroup
	// bookmarkGen counts bookmark ticks; a watcher that asked for
	// bookmarks sends one per tick.
	bookmarkGen uint64
	watchers    map[*watcher]struct{}
	bookmarkers int
	// stalled are the watchers whose consumer has left their channel
	// full, each waiting to send the change at its pos; a change that
	// puts one more than lagBound changes behind closes it.
	stalled  map[*watcher]struct{}
	lagBound uint64
	closed   bool

	// backendWatch is the running backend watch, when it can be asked for
	// progress.
	bwMu         sync.Mutex
	backendWatch storage.ProgressRequester

	// Consistent reads that wait for the cache register in revWaiters and
	// poke progressReq; the progress loop asks the backend for progress.
	revWaiters  atomic.Int64
	progressReq chan struct{}

	// Quorum reads of the backend's revision are shared: a caller joins
	// revNext, the read that starts after the running one.
	revMu   sync.Mutex
	revNext *revCall
	revReq  chan struct{}

	// written is the newest revision a write of a cached key through the
	// cache returned: reads not older than a revision wait for it too, so
	// that a client reads its own writes.
	written atomic.Int64

	// delegated counts the reads the backend served.
	delegated atomic.Int64
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
		fresh:            eventFreshDuration,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cacher{
		backend:     backend,
		root:        prefix,
		cfg:         cfg,
		start:       time.Now(),
		ctx:         ctx,
		cancel:      cancel,
		readyCh:     make(chan struct{}),
		records:     map[string]*record{},
		index:       keyindex.New(recordKey),
		revWake:     make(chan struct{}),
		wakes:       map[string]*wakeGroup{},
		watchers:    map[*watcher]struct{}{},
		stalled:     map[*watcher]struct{}{},
		progressReq: make(chan struct{}, 1),
		revReq:      make(chan struct{}, 1),
	}
	c.lagBound = lagBound(cfg.capacity)
	c.wg.Add(4)
	go c.run()
	go c.progressLoop()
	go c.revisionLoop()
	go c.tickLoop()
	return c
}

// Prefix returns the prefix whose keys the cache holds.
func (c *Cacher) Prefix() string { return c.root }

// KeyRoot implements storage.Rooted: the prefix without its trailing "/".
// A registry store given the cache keeps its objects under it.
func (c *Cacher) KeyRoot() string { return strings.TrimSuffix(c.root, "/") }

// Ready reports whether the cache holds a complete state and serves reads.
func (c *Cacher) Ready() bool { return c.ready.Load() }

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
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	ws := make([]*watcher, 0, len(c.watchers))
	for w := range c.watchers {
		ws = append(ws, w)
	}
	c.mu.Unlock()
	c.cancel()
	for _, w := range ws {
		w.Stop()
	}
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
	initializing := !c.ready.Load()
	if initializing {
		opts.SendInitialEvents = true
	} else {
		opts.Revision = c.rev.Load()
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
	var init *initialState
	if initializing {
		init = newInitialState()
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
				init.add(ev)
			case ev.Type == storage.Bookmark && ev.InitialEventsEnd:
				c.install(init, ev.Revision)
				init = nil
				progressed = true
			case ev.Type == storage.Bookmark:
			default:
				return progressed, fmt.Errorf("backend sent %s %q among the initial events", ev.Type, ev.Key)
			}
		default:
			c.apply(ev)
			progressed = true
		}
	}
	return progressed, errors.New("the backend closed the watch")
}

// initialState is the state a new list builds before it replaces the
// cache's.
type initialState struct {
	records map[string]*record
	keys    []*record
}

func newInitialState() *initialState { return &initialState{records: map[string]*record{}} }

func (s *initialState) add(ev storage.Event) {
	memo := ev.Memo
	if memo == nil {
		memo = storage.NewMemo()
	}
	v := &version{rev: ev.Revision, value: ev.Value, memo: memo}
	if r := s.records[ev.Key]; r != nil {
		r.versions[0] = v // a backend never sends a key twice; keep the last
		return
	}
	r := &record{key: ev.Key, versions: []*version{v}}
	s.records[ev.Key] = r
	s.keys = append(s.keys, r)
}

// install replaces the cache's state with s, the state at rev.
func (c *Cacher) install(s *initialState, rev int64) {
	index := keyindex.New(recordKey)
	for _, r := range s.keys {
		index.Insert(r)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records, c.index, c.live = s.records, index, len(s.keys)
	clear(c.events)
	// Stalled watchers end with the error of the new epoch, not as laggards.
	clear(c.stalled)
	c.firstSeq += uint64(len(c.events))
	c.events = nil
	c.floor, c.watchFloor = rev, rev
	c.advanceLocked(rev)
	if c.ready.CompareAndSwap(false, true) && c.epoch == 0 {
		close(c.readyCh)
	}
}

// reset drops the cache's state when the backend cannot resume its watch:
// reads go to the backend until a new list is in, and every watcher ends
// with err (ErrExpired), so that its client lists again.
func (c *Cacher) reset(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready.Load() {
		return
	}
	c.cfg.logger.Warn("watch cache: the backend lost the cache's revision; listing again", "prefix", c.root, "revision", c.seen, "err", err)
	c.ready.Store(false)
	c.epoch++
	c.records, c.index, c.live = map[string]*record{}, keyindex.New(recordKey), 0
	clear(c.events)
	// Stalled watchers end with the error of the new epoch, not as laggards.
	clear(c.stalled)
	c.firstSeq += uint64(len(c.events))
	c.events = nil
	c.wakeAllLocked()
}

// advanceLocked records that the cache has seen everything up to rev.
func (c *Cacher) advanceLocked(rev int64) {
	if rev <= c.seen {
		return
	}
	c.seen = rev
	c.rev.Store(rev)
	// A reader registers in revWaiters before it reads seen under the
	// lock: one that registered too late to be woken sees the new seen.
	if c.revWaiters.Load() > 0 {
		close(c.revWake)
		c.revWake = make(chan struct{})
	}
}

// wakeGroup is what the watchers of one prefix wait on: a change under
// the prefix wakes them, one under another namespace does not, so that a
// change costs wake-ups of the watchers it concerns, not of all.
type wakeGroup struct {
	// ch is closed (and replaced) when a change under the prefix is
	// appended, or a bookmark is due.
	ch chan struct{}
	n  int // watchers
	// evicted is one past the sequence number of the newest change under
	// the prefix that left the window: a watcher whose position is below
	// it missed a change. Below it, a watcher only skipped others'.
	evicted uint64
}

// groupsOf calls f with the wake group of each prefix of key that has
// watchers. The caller holds c.mu.
func (c *Cacher) groupsOf(key string, f func(*wakeGroup)) {
	if len(c.wakes) == 0 {
		return
	}
	for i := len(c.root) - 1; i < len(key); i++ {
		if key[i] == '/' {
			if g := c.wakes[key[:i+1]]; g != nil {
				f(g)
			}
		}
	}
}

func (g *wakeGroup) wake() {
	close(g.ch)
	g.ch = make(chan struct{})
}

// wakeAllLocked wakes every watcher.
func (c *Cacher) wakeAllLocked() {
	for _, g := range c.wakes {
		g.wake()
	}
}

// apply adds one change from the backend watch.
func (c *Cacher) apply(ev storage.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.Type {
	case storage.Added, storage.Modified, storage.Deleted:
	case storage.Bookmark:
		c.advanceLocked(ev.Revision)
		return
	default:
		return
	}
	if ev.Revision < c.seen {
		return // already seen; a backend never goes back
	}
	rec := c.records[ev.Key]
	prev := rec.latest()
	e := event{prev: prev, at: int64(time.Since(c.start))}
	switch {
	case ev.Type == storage.Deleted && prev == nil:
		c.advanceLocked(ev.Revision) // nothing the cache holds
		return
	case ev.Type == storage.Deleted:
		// The tombstone's memo is the Deleted event's (see
		// storage.Event.Memo).
		memo := ev.Memo
		if memo == nil {
			memo = storage.NewMemo()
		}
		e.typ, e.cur = deleted, &version{rev: ev.Revision, deleted: true, memo: memo}
		c.live--
	default:
		memo := ev.Memo
		if memo == nil {
			memo = storage.NewMemo()
		}
		e.cur = &version{rev: ev.Revision, value: ev.Value, memo: memo}
		e.typ = modified
		if prev == nil {
			e.typ = added
			c.live++
		}
	}
	if rec == nil {
		rec = &record{key: ev.Key}
		c.records[ev.Key] = rec
		c.index.Insert(rec)
	}
	e.key = rec.key
	rec.versions = append(rec.versions, e.cur)
	c.events = append(c.events, e)
	c.advanceLocked(ev.Revision)
	c.evictLocked(e.at)
	c.groupsOf(e.key, (*wakeGroup).wake)
	if len(c.stalled) > 0 {
		c.closeLaggingLocked(e.at)
	}
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

// stallBudget is how long a watcher's consumer may leave its channel full
// before the watcher counts as not keeping up, kube-apiserver's dispatch
// budget: a consumer that reads on, however far behind, is not closed.
const stallBudget = 100 * time.Millisecond

// closeLaggingLocked closes the watchers stalled for stallBudget by now
// (nanoseconds since start) and more than lagBound changes behind, as
// kube-apiserver's watch cache closes a watcher whose buffer stays full:
// without an error, while the change they wait to send is still in the
// window, so that their client resumes from the last revision it got
// instead of listing again. The caller holds c.mu for writing.
func (c *Cacher) closeLaggingLocked(now int64) {
	next := c.firstSeq + uint64(len(c.events))
	for w := range c.stalled {
		if next-w.pos > c.lagBound && now-w.stalledAt >= int64(stallBudget) {
			delete(c.stalled, w)
			close(w.lagged)
		}
	}
}

// evictLocked drops the oldest changes the window no longer keeps, at time
// now (nanoseconds since start), and the history only they needed.
func (c *Cacher) evictLocked(now int64) {
	n := 0
	for n < len(c.events) {
		e := &c.events[n]
		size := len(c.events) - n
		var over bool
		switch {
		case e.cur.rev < c.compactTo:
			over = true
		case c.cfg.capacity > 0:
			over = size > c.cfg.capacity
		default:
			over = size > maxDynamicCapacity || (size > minDynamicCapacity && now-e.at > int64(c.cfg.fresh))
		}
		if !over {
			break
		}
		c.watchFloor = e.cur.rev
		c.floor = max(c.floor, e.cur.rev)
		n++
	}
	if n == 0 {
		return
	}
	for i := range c.events[:n] {
		key := c.events[i].key
		if rec := c.records[key]; rec != nil && rec.compact(c.floor) {
			delete(c.records, rec.key)
			c.index.Delete(rec.key)
		}
		evicted := c.firstSeq + uint64(i) + 1
		c.groupsOf(key, func(g *wakeGroup) { g.evicted = evicted })
	}
	clear(c.events[:n])
	c.events = c.events[n:]
	c.firstSeq += uint64(n)
}

// Compact discards the cache's history before rev, as a backend compaction
// does: afterwards reads at older revisions are served by the backend
// (which fails them with ErrExpired once it has compacted too), and watches
// from revisions whose later changes are gone fail with ErrExpired. It
// waits for the cache to reach rev first.
//
// The cache does not need it: its window is its own history. It is for
// callers that compact the backend and want the cache to agree, such as
// the storagetest suite.
func (c *Cacher) Compact(ctx context.Context, rev int64) error {
	if c.isClosed() {
		return errClosed()
	}
	if !c.ready.Load() {
		return nil // nothing cached
	}
	if delegate, err := c.sync(ctx, rev, false); err != nil {
		return err
	} else if delegate {
		return storage.NewUnavailable(fmt.Errorf("watch cache of %q did not reach revision %d to compact", c.root, rev))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev <= c.floor {
		return nil
	}
	c.compactTo = max(c.compactTo, rev)
	c.evictLocked(int64(time.Since(c.start)))
	c.floor = max(c.floor, rev)
	// Keys whose changes all came before rev keep versions only reads
	// below the new floor could see.
	for _, rec := range c.records {
		if rec.compact(c.floor) {
			delete(c.records, rec.key)
			c.index.Delete(rec.key)
		}
	}
	return nil
}

// tickLoop sends bookmark ticks and ages the dynamic window when no change
// comes to do it.
func (c *Cacher) tickLoop() {
	defer c.wg.Done()
	tick := min(c.cfg.bookmarkInterval, time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	lastBookmark := time.Now()
	for {
		select {
		case <-t.C:
		case <-c.ctx.Done():
			return
		}
		now := time.Now()
		bookmark := now.Sub(lastBookmark) >= c.cfg.bookmarkInterval-tick/2
		c.mu.Lock()
		if c.cfg.capacity == 0 {
			c.evictLocked(int64(now.Sub(c.start)))
		}
		if bookmark {
			lastBookmark = now
			if c.bookmarkers > 0 {
				c.bookmarkGen++
				c.wakeAllLocked()
			}
		}
		c.mu.Unlock()
	}
}
