package memory

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/internal/history"
)

// Defaults of the options.
const (
	// DefaultCompactionInterval is kube-apiserver's default
	// --etcd-compaction-interval.
	DefaultCompactionInterval = 5 * time.Minute
	// DefaultWatchBuffer is how many changes a watcher whose consumer
	// stalled may fall behind before it is closed.
	DefaultWatchBuffer = 10000
	// DefaultBookmarkInterval is how often a watch that asked for bookmarks
	// gets one.
	DefaultBookmarkInterval = time.Minute
	// DefaultMaxRevisionWait is how long a read of a revision the store has
	// not reached yet waits for it, as kube-apiserver's watch cache does.
	DefaultMaxRevisionWait = 3 * time.Second
)

// outBuffer is the capacity of a watch's result channel.
const outBuffer = 32

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

// WithWatchBuffer sets how many changes, past the one it waits to send and
// those in its channel, a watcher whose consumer left its channel full for
// 100 ms may fall behind before it is closed (without an error: its client
// watches again from the last revision it got).
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

// value is what a version of a key holds, inline in the records and the
// log. A tombstone's has no bytes; its memo is for the last value as its
// Deleted event reports it, at the delete's revision.
type value struct {
	data []byte
	memo *storage.Memo
}

func (v value) Data() []byte        { return v.data }
func (v value) Memo() *storage.Memo { return v.memo }

func (v value) KeyValue(key string, rev int64) storage.KeyValue {
	return storage.KeyValue{Key: key, Value: v.data, Revision: rev, Memo: v.memo}
}

// version is a value with the revision it was written at.
type version struct {
	rev int64
	value
}

// Store is an in-memory storage.Interface. The zero value is not usable;
// call New.
//
// Values are copied on write and shared on read: callers must not modify
// the bytes a Store returns.
type Store struct {
	cfg config
	// h is the store: every key's versions, the log of writes since the
	// compacted revision, and the watches reading it. Its lock guards the
	// fields below too.
	h *history.History[value]
	// lastTick and tickRev drive automatic compaction: at each interval the
	// store compacts to tickRev, the revision it had one interval earlier.
	lastTick time.Time
	tickRev  int64
	// closed is set under h's lock and read without it.
	closed atomic.Bool
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
	s := &Store{
		cfg: cfg,
		h: history.New[value](history.Config{
			Root:             "/",
			BookmarkInterval: cfg.bookmarkInterval,
			LagBound:         uint64(cfg.watchBuffer),
			OutBuffer:        outBuffer,
		}),
		lastTick: cfg.now(),
	}
	// Revision 1 is the empty store, as in etcd: no list ever reports
	// revision 0, which clients read as "any".
	s.h.Install(nil, 1)
	return s
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
	data := bytes.Clone(value)
	s.h.Lock()
	defer s.h.Unlock()
	if s.closed.Load() {
		return 0, errClosed()
	}
	if _, _, ok := s.h.LatestLocked(key); ok {
		return 0, storage.NewAlreadyExists(key)
	}
	return s.write(key, data, false).rev, nil
}

// write records a version of key at the next revision; the history hands
// it to the watchers. The caller holds s.h's lock.
func (s *Store) write(key string, data []byte, deleted bool) version {
	s.maybeCompact()
	v := version{rev: s.h.RevisionLocked() + 1, value: value{data: data, memo: storage.NewMemo()}}
	s.h.PutLocked(key, v.rev, v.value, deleted)
	return v
}

func (s *Store) read(key string) (version, bool, error) {
	if s.closed.Load() {
		return version{}, false, errClosed()
	}
	v, rev, ok, _ := s.h.Latest(key)
	return version{rev: rev, value: v}, ok, nil
}

// latestLocked is read under s.h's lock.
func (s *Store) latestLocked(key string) (version, bool) {
	v, rev, ok := s.h.LatestLocked(key)
	return version{rev: rev, value: v}, ok
}

func kv(key string, v version) storage.KeyValue {
	return storage.KeyValue{Key: key, Value: v.data, Revision: v.rev, Memo: v.memo}
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
	reached, err := s.h.WaitRevision(ctx, rev, s.cfg.maxRevisionWait, nil)
	switch {
	case errors.Is(err, history.ErrClosed):
		return nil // the read that follows fails
	case err != nil:
		return err
	case !reached:
		return storage.NewTooLargeResourceVersion(rev, s.h.Revision())
	}
	return nil
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
		cur, exists, fresh = version{rev: sug.Revision, value: value{data: sug.Value, memo: sug.Memo}}, true, false
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
		if exists && bytes.Equal(newValue, cur.data) {
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
		s.h.Lock()
		if s.closed.Load() {
			s.h.Unlock()
			return storage.KeyValue{}, errClosed()
		}
		now, nowExists := s.latestLocked(key)
		if nowExists != exists || (exists && now.rev != cur.rev) {
			s.h.Unlock()
			cur, exists, fresh = now, nowExists, true
			continue
		}
		v := s.write(key, newValue, false)
		s.h.Unlock()
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
		s.h.Lock()
		if s.closed.Load() {
			s.h.Unlock()
			return storage.KeyValue{}, errClosed()
		}
		now, nowExists := s.latestLocked(key)
		if !nowExists || now.rev != cur.rev {
			s.h.Unlock()
			cur, exists = now, nowExists
			continue
		}
		v := s.write(key, nil, true)
		s.h.Unlock()
		return storage.KeyValue{Key: key, Value: cur.data, Revision: v.rev, Memo: v.memo}, nil
	}
}

// CurrentRevision implements storage.Interface.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if s.closed.Load() {
		return 0, errClosed()
	}
	return s.h.Revision(), nil
}

// Compact discards the history before rev: reads at older revisions, and
// watches from them, fail with storage.ErrExpired afterwards. Compacting
// to a revision already compacted is a no-op.
func (s *Store) Compact(rev int64) error {
	s.h.Lock()
	defer s.h.Unlock()
	if s.closed.Load() {
		return errClosed()
	}
	if cur := s.h.RevisionLocked(); rev > cur {
		return storage.NewTooLargeResourceVersion(rev, cur)
	}
	s.h.CompactLocked(rev)
	return nil
}

// maybeCompact runs the automatic compaction when an interval has passed.
// It runs on writes, not on a timer: history only grows with writes, and a
// store with no goroutine of its own has none to leak. The caller holds
// s.h's lock.
func (s *Store) maybeCompact() {
	if s.cfg.compactionInterval <= 0 {
		return
	}
	now := s.cfg.now()
	if now.Sub(s.lastTick) < s.cfg.compactionInterval {
		return
	}
	s.h.CompactLocked(s.tickRev)
	s.lastTick, s.tickRev = now, s.h.RevisionLocked()
}

// Close ends every watch. Later calls fail with ErrUnavailable.
func (s *Store) Close() error {
	s.h.Lock()
	s.closed.Store(true)
	s.h.Unlock()
	s.h.Close()
	return nil
}
