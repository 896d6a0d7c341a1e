package memory

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/internal/keyindex"
)

// Defaults of the options.
const (
	// DefaultCompactionInterval is kube-apiserver's default
	// --etcd-compaction-interval.
	DefaultCompactionInterval = 5 * time.Minute
	// DefaultWatchBuffer is how many events a watcher may fall behind
	// before it is ended.
	DefaultWatchBuffer = 10000
	// DefaultBookmarkInterval is how often a watch that asked for bookmarks
	// gets one.
	DefaultBookmarkInterval = time.Minute
	// DefaultMaxRevisionWait is how long a read of a revision the store has
	// not reached yet waits for it, as kube-apiserver's watch cache does.
	DefaultMaxRevisionWait = 3 * time.Second
)

// Option configures a Store.
type Option func(*config)

type config struct {
	compactionInterval time.Duration
	watchBuffer        int
	bookmarkInterval   time.Duration
	maxRevisionWait    time.Duration
	maxObjectBytes     int64
	now                func() time.Time
}

// WithCompactionInterval sets how much history the store keeps: at each
// interval it compacts to the revision it had one interval earlier. Zero
// keeps all history (until Compact is called).
func WithCompactionInterval(d time.Duration) Option {
	return func(c *config) { c.compactionInterval = d }
}

// WithWatchBuffer sets how many undelivered events a watcher may hold
// before it is ended with an ErrorEvent.
func WithWatchBuffer(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.watchBuffer = n
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

// WithMaxRevisionWait sets how long a read of a future revision waits for
// the store to reach it before failing with ErrTooLargeResourceVersion.
func WithMaxRevisionWait(d time.Duration) Option {
	return func(c *config) { c.maxRevisionWait = d }
}

// WithMaxObjectBytes sets the size limit of a stored value (default
// storage.DefaultMaxObjectBytes, etcd's): Create and GuaranteedUpdate refuse
// a larger one with storage.ErrTooLarge.
func WithMaxObjectBytes(n int64) Option {
	return func(c *config) {
		if n > 0 {
			c.maxObjectBytes = n
		}
	}
}

// version is one value of one key. A delete is a version too (a
// tombstone), so that reads at older revisions still see the value before.
type version struct {
	rev     int64
	value   []byte
	memo    *storage.Memo
	deleted bool
}

// record is the history of one key, oldest first.
type record struct {
	key      string
	versions []version
}

func (r *record) latest() (version, bool) {
	if r == nil || len(r.versions) == 0 {
		return version{}, false
	}
	v := r.versions[len(r.versions)-1]
	return v, !v.deleted
}

// at returns the value the key had at rev.
func (r *record) at(rev int64) (version, bool) {
	n := len(r.versions)
	if n > 0 && r.versions[n-1].rev <= rev {
		v := r.versions[n-1]
		return v, !v.deleted
	}
	i := sort.Search(n, func(i int) bool { return r.versions[i].rev > rev })
	if i == 0 {
		return version{}, false
	}
	v := r.versions[i-1]
	return v, !v.deleted
}

// compact drops the versions no read at or after rev can see; it reports
// whether the key has no history left.
func (r *record) compact(rev int64) bool {
	i := 0
	for i+1 < len(r.versions) && r.versions[i+1].rev <= rev {
		i++
	}
	if len(r.versions) > 0 && r.versions[i].rev <= rev && r.versions[i].deleted {
		i++
	}
	if i > 0 {
		clear(r.versions[:i])
		r.versions = r.versions[i:]
	}
	return len(r.versions) == 0
}

// change is one write, as the history log keeps it for watchers.
type change struct {
	key    string
	cur    version
	prev   version
	prevOK bool
}

func (c *change) event() storage.Event {
	switch {
	case c.cur.deleted:
		return storage.Event{Type: storage.Deleted, Key: c.key, Value: c.prev.value, Memo: c.cur.memo, Revision: c.cur.rev}
	case c.prevOK:
		return storage.Event{Type: storage.Modified, Key: c.key, Value: c.cur.value, PrevValue: c.prev.value, Memo: c.cur.memo, Revision: c.cur.rev}
	default:
		return storage.Event{Type: storage.Added, Key: c.key, Value: c.cur.value, Memo: c.cur.memo, Revision: c.cur.rev}
	}
}

// Store is an in-memory storage.Interface. The zero value is not usable;
// call New.
//
// Values are copied on write and shared on read: callers must not modify
// the bytes a Store returns.
type Store struct {
	cfg config

	mu        sync.RWMutex
	rev       int64
	compacted int64
	records   map[string]*record
	// keys holds the same records sorted by key, for lists. Only the first
	// write of a key inserts into it, and only compaction removes.
	keys *keyindex.Index[*record]
	// log is every write since the compacted revision; log[i] is at
	// revision logStart+i, because every write takes the next revision.
	log      []change
	logStart int64
	// revWait, when not nil, is closed by the next write: readers waiting
	// for a revision sleep on it.
	revWait chan struct{}
	// lastTick and tickRev drive automatic compaction: at each interval the
	// store compacts to tickRev, the revision it had one interval earlier.
	lastTick time.Time
	tickRev  int64
	closed   bool

	// wmu guards watchers. Writers take it while holding mu, so a watcher
	// registered under mu sees every later write.
	wmu       sync.Mutex
	watchers  map[string]map[*watcher]struct{} // by prefix
	nwatchers atomic.Int64
}

var _ storage.Interface = (*Store)(nil)

// New returns an empty Store.
func New(opts ...Option) *Store {
	cfg := config{
		compactionInterval: DefaultCompactionInterval,
		watchBuffer:        DefaultWatchBuffer,
		bookmarkInterval:   DefaultBookmarkInterval,
		maxRevisionWait:    DefaultMaxRevisionWait,
		maxObjectBytes:     storage.DefaultMaxObjectBytes,
		now:                time.Now,
	}
	for _, o := range opts {
		o(&cfg)
	}
	// Revision 1 is the empty store, as in etcd: no list ever reports
	// revision 0, which clients read as "any".
	return &Store{
		cfg:      cfg,
		rev:      1,
		logStart: 2,
		records:  map[string]*record{},
		keys:     keyindex.New(func(r *record) string { return r.key }),
		watchers: map[string]map[*watcher]struct{}{},
		lastTick: cfg.now(),
	}
}

func errClosed() error { return storage.NewUnavailable(errors.New("memory store is closed")) }

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := storage.CheckSize(value, s.cfg.maxObjectBytes); err != nil {
		return 0, err
	}
	value = bytes.Clone(value)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errClosed()
	}
	rec := s.records[key]
	if _, ok := rec.latest(); ok {
		return 0, storage.NewAlreadyExists(key)
	}
	return s.write(key, value, false).rev, nil
}

// write appends a version to key at the next revision, logs it and hands
// it to the watchers. The caller holds s.mu.
func (s *Store) write(key string, value []byte, deleted bool) version {
	// Compaction may drop the record of a deleted key: look it up after.
	s.maybeCompact()
	rec := s.records[key]
	if rec == nil {
		rec = &record{key: key}
		s.records[key] = rec
		s.keys.Insert(rec)
	}
	s.rev++
	// A tombstone has a memo too: for the last value as its Deleted
	// event reports it, at the delete's revision.
	v := version{rev: s.rev, value: value, deleted: deleted, memo: storage.NewMemo()}
	c := change{key: key, cur: v}
	c.prev, c.prevOK = rec.latest()
	rec.versions = append(rec.versions, v)
	s.log = append(s.log, c)
	if s.revWait != nil {
		close(s.revWait)
		s.revWait = nil
	}
	if s.nwatchers.Load() > 0 {
		s.notify(&c)
	}
	return v
}

func (s *Store) read(key string) (version, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return version{}, false, errClosed()
	}
	v, ok := s.records[key].latest()
	return v, ok, nil
}

func kv(key string, v version) storage.KeyValue {
	return storage.KeyValue{Key: key, Value: v.value, Revision: v.rev, Memo: v.memo}
}

// Get implements storage.Interface.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions) (storage.KeyValue, error) {
	if err := ctx.Err(); err != nil {
		return storage.KeyValue{}, err
	}
	if opts.MinRevision > 0 {
		if err := s.waitForRevision(ctx, opts.MinRevision); err != nil {
			return storage.KeyValue{}, err
		}
	}
	v, ok, err := s.read(key)
	switch {
	case err != nil:
		return storage.KeyValue{}, err
	case ok:
		return kv(key, v), nil
	case opts.IgnoreNotFound:
		return storage.KeyValue{}, nil
	default:
		return storage.KeyValue{}, storage.NewNotFound(key)
	}
}

// waitForRevision returns when the store has reached rev, or fails with
// ErrTooLargeResourceVersion after cfg.maxRevisionWait.
func (s *Store) waitForRevision(ctx context.Context, rev int64) error {
	s.mu.RLock()
	cur := s.rev
	s.mu.RUnlock()
	if cur >= rev {
		return nil
	}
	timer := time.NewTimer(s.cfg.maxRevisionWait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		cur = s.rev
		if cur >= rev || s.closed {
			s.mu.Unlock()
			return nil
		}
		if s.revWait == nil {
			s.revWait = make(chan struct{})
		}
		wait := s.revWait
		s.mu.Unlock()
		select {
		case <-wait:
		case <-timer.C:
			return storage.NewTooLargeResourceVersion(rev, cur)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// GuaranteedUpdate implements storage.Interface. tryUpdate runs without
// the store's lock, so it may take its time or even use the store; the
// write commits only if the key is still at the revision tryUpdate saw.
func (s *Store) GuaranteedUpdate(ctx context.Context, key string, opts storage.UpdateOptions, tryUpdate storage.UpdateFunc) (storage.KeyValue, error) {
	var (
		cur    version
		exists bool
		fresh  = true
		err    error
	)
	if opts.Suggestion.Key != "" {
		sug := opts.Suggestion
		cur, exists, fresh = version{rev: sug.Revision, value: sug.Value, memo: sug.Memo}, true, false
	} else if cur, exists, err = s.read(key); err != nil {
		return storage.KeyValue{}, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return storage.KeyValue{}, err
		}
		// A stale suggestion may explain any refusal or no-op: only a
		// fresh read is trusted with those.
		retry := func() error {
			cur, exists, err = s.read(key)
			fresh = true
			return err
		}
		if !exists && !opts.IgnoreNotFound {
			if !fresh {
				if err := retry(); err != nil {
					return storage.KeyValue{}, err
				}
				continue
			}
			return storage.KeyValue{}, storage.NewNotFound(key)
		}
		var curKV storage.KeyValue
		if exists {
			curKV = kv(key, cur)
		}
		if opts.Precondition != nil {
			if err := opts.Precondition(curKV); err != nil {
				if !fresh {
					if err := retry(); err != nil {
						return storage.KeyValue{}, err
					}
					continue
				}
				return storage.KeyValue{}, err
			}
		}
		newValue, err := tryUpdate(curKV)
		if err != nil {
			if !fresh {
				if err := retry(); err != nil {
					return storage.KeyValue{}, err
				}
				continue
			}
			return storage.KeyValue{}, err
		}
		if exists && bytes.Equal(newValue, cur.value) {
			if !fresh {
				if err := retry(); err != nil {
					return storage.KeyValue{}, err
				}
				continue
			}
			return curKV, nil
		}
		if err := storage.CheckSize(newValue, s.cfg.maxObjectBytes); err != nil {
			if !fresh {
				if err := retry(); err != nil {
					return storage.KeyValue{}, err
				}
				continue
			}
			return storage.KeyValue{}, err
		}
		newValue = bytes.Clone(newValue)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return storage.KeyValue{}, errClosed()
		}
		rec := s.records[key]
		now, nowExists := rec.latest()
		if nowExists != exists || (exists && now.rev != cur.rev) {
			s.mu.Unlock()
			cur, exists, fresh = now, nowExists, true
			continue
		}
		v := s.write(key, newValue, false)
		s.mu.Unlock()
		return kv(key, v), nil
	}
}

// Delete implements storage.Interface.
func (s *Store) Delete(ctx context.Context, key string, opts storage.DeleteOptions) (storage.KeyValue, error) {
	cur, exists, err := s.read(key)
	if err != nil {
		return storage.KeyValue{}, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return storage.KeyValue{}, err
		}
		if !exists {
			return storage.KeyValue{}, storage.NewNotFound(key)
		}
		if opts.ExpectedRevision != 0 && opts.ExpectedRevision != cur.rev {
			return storage.KeyValue{}, storage.NewConflict(key, cur.rev)
		}
		if opts.Precondition != nil {
			if err := opts.Precondition(kv(key, cur)); err != nil {
				return storage.KeyValue{}, err
			}
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return storage.KeyValue{}, errClosed()
		}
		rec := s.records[key]
		now, nowExists := rec.latest()
		if !nowExists || now.rev != cur.rev {
			s.mu.Unlock()
			cur, exists = now, nowExists
			continue
		}
		v := s.write(key, nil, true)
		s.mu.Unlock()
		return storage.KeyValue{Key: key, Value: cur.value, Revision: v.rev, Memo: v.memo}, nil
	}
}

// CurrentRevision implements storage.Interface.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, errClosed()
	}
	return s.rev, nil
}

// Compact discards the history before rev: reads at older revisions, and
// watches from them, fail with storage.ErrExpired afterwards. Compacting
// to a revision already compacted is a no-op.
func (s *Store) Compact(rev int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed()
	}
	if rev > s.rev {
		return storage.NewTooLargeResourceVersion(rev, s.rev)
	}
	s.compact(rev)
	return nil
}

// maybeCompact runs the automatic compaction when an interval has passed.
// It runs on writes, not on a timer: history only grows with writes, and a
// store with no goroutine of its own has none to leak.
func (s *Store) maybeCompact() {
	if s.cfg.compactionInterval <= 0 {
		return
	}
	now := s.cfg.now()
	if now.Sub(s.lastTick) < s.cfg.compactionInterval {
		return
	}
	s.compact(s.tickRev)
	s.lastTick, s.tickRev = now, s.rev
}

// compact drops history before rev. The caller holds s.mu.
func (s *Store) compact(rev int64) {
	if rev <= s.compacted {
		return
	}
	// Only keys written before rev have history to drop, and each such
	// write is in the log: the log tells which records to visit.
	if n := int(rev - s.logStart); n > 0 {
		removed := false
		for i := range s.log[:n] {
			key := s.log[i].key
			if rec := s.records[key]; rec != nil && rec.compact(rev) {
				delete(s.records, key)
				removed = true
			}
		}
		clear(s.log[:n])
		s.log = s.log[n:]
		s.logStart += int64(n)
		if removed {
			s.keys.DeleteFunc(func(r *record) bool { return len(r.versions) == 0 })
		}
	}
	s.compacted = rev
}

// Close ends every watch. Later calls fail with ErrUnavailable.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.wmu.Lock()
	var ws []*watcher
	for _, set := range s.watchers {
		for w := range set {
			ws = append(ws, w)
		}
	}
	s.wmu.Unlock()
	s.mu.Unlock()
	for _, w := range ws {
		w.Stop()
	}
	return nil
}
