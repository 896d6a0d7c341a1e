package history

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/internal/keyindex"
)

// Value is what a version of a key holds, as its owner keeps it: the
// history reads its bytes and memo only to hand them out. A tombstone's
// value has no bytes but a memo: the one of its Deleted event (see
// storage.Event.Memo).
type Value interface {
	// KeyValue returns the value as key's at rev, for lists and initial
	// events: one call per item where a list hands out thousands.
	KeyValue(key string, rev int64) storage.KeyValue
	// Data returns the encoded value; callers must not modify it.
	Data() []byte
	// Memo returns the value's scratch space, where the registry keeps its
	// decoded form, its JSON per served version and its selectable
	// attributes.
	Memo() *storage.Memo
}

// version is one value of one key with the revision that wrote it. A
// delete is a version too (a tombstone), so that reads at older revisions
// still see the value before. Reads and compaction read the revisions and
// tombstone flags, never calling into the values; the value sits beside
// them, so a read touches one cache line of the record for both.
type version[V Value] struct {
	rev     int64
	deleted bool
	val     V
}

// record is the history of one key. Its newest version is inline: most
// keys have one version once the changes before their last have left the
// window, and then a record is one allocation, without a slice of one.
type record[V Value] struct {
	key string
	// older are the versions before last, oldest first; nil when there
	// are none.
	older []version[V]
	// last is the newest version; its rev is 0 when the record has no
	// versions left (revisions start at 1).
	last version[V]
}

func recordKey[V Value](r *record[V]) string { return r.key }

// empty reports whether the record has no versions left.
func (r *record[V]) empty() bool { return r.last.rev == 0 }

// versions returns how many versions the record holds.
func (r *record[V]) versions() int {
	if r.empty() {
		return 0
	}
	return len(r.older) + 1
}

// version returns the i-th version, oldest first.
func (r *record[V]) version(i int) *version[V] {
	if i < len(r.older) {
		return &r.older[i]
	}
	return &r.last
}

// add appends the key's newest version.
func (r *record[V]) add(ver version[V]) {
	if !r.empty() {
		r.older = append(r.older, r.last)
	}
	r.last = ver
}

// latest returns the key's current value and its revision; ok is false
// when it has none.
func (r *record[V]) latest() (v V, rev int64, ok bool) {
	if r == nil || r.empty() {
		return v, 0, false
	}
	return r.last.val, r.last.rev, !r.last.deleted
}

// at returns the value the key had at rev, and the revision it was written
// at.
func (r *record[V]) at(rev int64) (v V, vrev int64, ok bool) {
	if ver := r.atVersion(rev); ver != nil {
		return ver.val, ver.rev, true
	}
	return v, 0, false
}

// atVersion returns the version a read at rev sees, nil when the key had
// no value then. Lists call it per key: the latest version, the common
// answer, is found without a search.
func (r *record[V]) atVersion(rev int64) *version[V] {
	if r.last.rev <= rev {
		if r.empty() || r.last.deleted {
			return nil
		}
		return &r.last
	}
	i := sort.Search(len(r.older), func(i int) bool { return r.older[i].rev > rev })
	if i == 0 || r.older[i-1].deleted {
		return nil
	}
	return &r.older[i-1]
}

// compact drops the versions no read at or after rev can see; it reports
// whether the key has no history left.
func (r *record[V]) compact(rev int64) bool {
	n := r.versions()
	i := 0
	for i+1 < n && r.version(i+1).rev <= rev {
		i++
	}
	if n > 0 && r.version(i).rev <= rev && r.version(i).deleted {
		i++
	}
	switch {
	case i == 0:
	case i == n:
		clear(r.older)
		r.older, r.last = nil, version[V]{}
	default:
		// Moved down rather than resliced, so that the slice's front
		// is not lost to later appends; let go when it is empty or
		// mostly spare, as most keys keep their last version only.
		k := copy(r.older, r.older[i:])
		clear(r.older[k:])
		switch {
		case k == 0:
			r.older = nil
		case cap(r.older) >= 4*k:
			r.older = slices.Clone(r.older[:k])
		default:
			r.older = r.older[:k]
		}
	}
	return r.empty()
}

// kind is the type of a change, in the low bits of its stamp.
type kind uint8

const (
	added kind = iota
	modified
	deleted

	kindBits = 2
)

// Change is one write in the log. It shares its values with the records,
// and its key with its record.
type Change[V Value] struct {
	rec *record[V]
	// Rev is the change's revision.
	Rev int64
	// Cur is the new value (a tombstone's for a delete); Prev the one
	// before, the zero V for an add.
	Cur, Prev V
	// stamp is when the history took the change (see At), shifted left
	// by kindBits, with the change's kind below: a field of its own would
	// cost 8 bytes a change after padding, for 2 bits.
	stamp int64
}

// Key returns the key the change wrote.
func (c *Change[V]) Key() string { return c.rec.key }

// At returns when the history took the change, in nanoseconds since it
// started (see Now), with Config.Timestamps (0 without): a window that
// keeps changes for a while reads it.
func (c *Change[V]) At() int64 { return c.stamp >> kindBits }

func (c *Change[V]) kind() kind { return kind(c.stamp & (1<<kindBits - 1)) }

// Type returns storage.Added, storage.Modified or storage.Deleted.
func (c *Change[V]) Type() storage.EventType {
	switch c.kind() {
	case added:
		return storage.Added
	case modified:
		return storage.Modified
	}
	return storage.Deleted
}

// Event returns the change as watchers see it.
func (c *Change[V]) Event() storage.Event {
	ev := storage.Event{Type: c.Type(), Key: c.rec.key, Revision: c.Rev, Memo: c.Cur.Memo()}
	switch c.kind() {
	case deleted:
		ev.Value = c.Prev.Data()
	case modified:
		ev.Value, ev.PrevValue = c.Cur.Data(), c.Prev.Data()
	default:
		ev.Value = c.Cur.Data()
	}
	return ev
}

// StallBudget is how long a watcher's consumer may leave its channel full
// before the watcher counts as not keeping up, kube-apiserver's dispatch
// budget: a consumer that reads on, however far behind, is not closed.
const StallBudget = 100 * time.Millisecond

// Config configures a History.
type Config struct {
	// Root is the prefix of every key the history holds ("/" for a whole
	// store): wake-ups look for watchers only at the prefixes below it.
	Root string
	// BookmarkInterval is how often watches that ask for bookmarks get
	// one; zero sends none but the deadline and requested ones.
	BookmarkInterval time.Duration
	// LagBound is how many changes behind a watcher whose consumer stalled
	// for StallBudget may be before it is closed; zero never closes one
	// that way.
	LagBound uint64
	// OutBuffer is the capacity of a watch's result channel.
	OutBuffer int
	// Logger gets the debug lines of closed watchers; nil is
	// slog.Default().
	Logger *slog.Logger
	// Timestamps makes PutLocked record when it took each change
	// (Change.At), for a window that keeps changes for a while; a clock
	// read per write is otherwise saved.
	Timestamps bool
}

// Errors of History's methods; owners turn them into their own.
var (
	// ErrClosed: the history is closed.
	ErrClosed = errors.New("history is closed")
	// ErrNotReady: the history holds no complete state (before Install,
	// after Reset).
	ErrNotReady = errors.New("history holds no state")
)

// History is a multi-version key-value state with its change log and
// watchers; see the package documentation. The zero value is not usable;
// call New.
type History[V Value] struct {
	cfg   Config
	start time.Time

	// RWMutex guards everything below and the owner's own state.
	sync.RWMutex

	// ready is true while the history holds a complete state; rev mirrors
	// seen for reads without the lock.
	ready atomic.Bool
	rev   atomic.Int64

	// records and index hold every key with history; the index counts the
	// keys that exist at the latest revision (its live records).
	records map[string]*record[V]
	index   *keyindex.Index[*record[V]]
	// log holds the retained changes, oldest first; log[0] has sequence
	// number firstSeq. Watchers read it by sequence number.
	log      []Change[V]
	firstSeq uint64
	// seen is the revision the history has everything up to.
	seen int64
	// floor is the oldest revision whose state can be read; watchFloor the
	// oldest revision a watch can start from (every later change is in
	// the log). floor >= watchFloor.
	floor, watchFloor int64
	// epoch counts the Resets: watchers of an older epoch end with
	// resetErr.
	epoch    uint64
	resetErr error
	// revWake is closed (and replaced) when seen moves while revWaiters
	// wait.
	revWake    chan struct{}
	revWaiters atomic.Int64

	// wakes are what the watchers of each prefix wait on.
	wakes    map[string]*wakeGroup
	watchers map[*Watcher[V]]struct{}
	// bookmarkGen counts bookmark ticks; a watcher that asked for
	// bookmarks sends one per tick. The ticker runs while bookmarkers > 0;
	// tickStop ends it.
	bookmarkGen uint64
	bookmarkers int
	tickStop    chan struct{}
	ticks       sync.WaitGroup
	// stalled are the watchers whose consumer left their channel full,
	// each waiting to send the change at its pos.
	stalled map[*Watcher[V]]struct{}
	closed  bool
	done    chan struct{} // closed by Close
}

// New returns an empty History that is not ready: Install gives it its
// first state.
func New[V Value](cfg Config) *History[V] {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OutBuffer <= 0 {
		cfg.OutBuffer = 16
	}
	return &History[V]{
		cfg:      cfg,
		start:    time.Now(),
		records:  map[string]*record[V]{},
		index:    keyindex.New(recordKey[V]),
		revWake:  make(chan struct{}),
		wakes:    map[string]*wakeGroup{},
		watchers: map[*Watcher[V]]struct{}{},
		stalled:  map[*Watcher[V]]struct{}{},
		done:     make(chan struct{}),
	}
}

// Now returns the time in the clock of Change.At.
func (h *History[V]) Now() int64 { return int64(time.Since(h.start)) }

// Ready reports whether the history holds a complete state.
func (h *History[V]) Ready() bool { return h.ready.Load() }

// Revision returns the revision the history has everything up to, without
// the lock.
func (h *History[V]) Revision() int64 { return h.rev.Load() }

// RevisionLocked is Revision under the lock.
func (h *History[V]) RevisionLocked() int64 { return h.seen }

// FloorsLocked returns the oldest revision a read can be served at and the
// oldest a watch can start from.
func (h *History[V]) FloorsLocked() (read, watch int64) { return h.floor, h.watchFloor }

// LatestLocked returns key's current value and the revision it was
// written at; ok is false when it has none.
func (h *History[V]) LatestLocked(key string) (v V, rev int64, ok bool) {
	return h.records[key].latest()
}

// Latest is LatestLocked, with ready false when the history holds no
// state.
func (h *History[V]) Latest(key string) (v V, rev int64, ok, ready bool) {
	h.RLock()
	ready = h.ready.Load()
	if ready {
		v, rev, ok = h.records[key].latest()
	}
	h.RUnlock()
	return v, rev, ok, ready
}

// State is a complete state being built for Install, outside the lock.
type State[V Value] struct {
	records map[string]*record[V]
	keys    []*record[V]
}

// NewState returns an empty State.
func NewState[V Value]() *State[V] { return &State[V]{records: map[string]*record[V]{}} }

// Add sets key's value, written at rev; a later Add of the same key
// replaces it.
func (s *State[V]) Add(key string, rev int64, v V) {
	if r := s.records[key]; r != nil {
		r.last = version[V]{rev: rev, val: v}
		return
	}
	r := &record[V]{key: key, last: version[V]{rev: rev, val: v}}
	s.records[key] = r
	s.keys = append(s.keys, r)
}

// Install replaces the history's state with s (nil: empty), the state at
// rev, and makes it ready. The log starts empty: watches start from rev
// on. first reports whether this made a history ready that never was.
func (h *History[V]) Install(s *State[V], rev int64) (first bool) {
	if s == nil {
		s = NewState[V]()
	}
	index := keyindex.New(recordKey[V])
	for _, r := range s.keys {
		index.Insert(r, true)
	}
	h.Lock()
	defer h.Unlock()
	h.records, h.index = s.records, index
	h.dropLogLocked()
	h.floor, h.watchFloor = rev, rev
	h.advanceLocked(rev)
	return h.ready.CompareAndSwap(false, true) && h.epoch == 0
}

// dropLogLocked empties the log. Stalled watchers end with the error of a
// new epoch, or read on from the new state, not as laggards.
func (h *History[V]) dropLogLocked() {
	clear(h.log)
	clear(h.stalled)
	h.firstSeq += uint64(len(h.log))
	h.log = nil
}

// Reset drops the state: the history is not ready until the next Install,
// and every watcher ends with err. It reports false when the history was
// not ready.
func (h *History[V]) Reset(err error) bool {
	h.Lock()
	defer h.Unlock()
	if !h.ready.Load() {
		return false
	}
	h.ready.Store(false)
	h.epoch++
	h.resetErr = err
	h.records, h.index = map[string]*record[V]{}, keyindex.New(recordKey[V])
	h.dropLogLocked()
	h.wakeAllLocked()
	h.wakeRevLocked()
	return true
}

// advanceLocked records that the history has everything up to rev.
func (h *History[V]) advanceLocked(rev int64) {
	if rev <= h.seen {
		return
	}
	h.seen = rev
	h.rev.Store(rev)
	h.wakeRevLocked()
}

func (h *History[V]) wakeRevLocked() {
	// A waiter registers in revWaiters before it reads seen under the
	// lock: one that registered too late to be woken sees the new seen.
	if h.revWaiters.Load() > 0 {
		close(h.revWake)
		h.revWake = make(chan struct{})
	}
}

// AdvanceLocked records that the history has everything up to rev though
// no change came (a backend's bookmark).
func (h *History[V]) AdvanceLocked(rev int64) { h.advanceLocked(rev) }

// PutLocked takes a change of key at rev, later than every change before:
// v is its new value or, with del, the tombstone's. A delete of a key
// without a value only moves the revision on; ok is false then, and for a
// revision older than the history's. The caller holds the lock for
// writing, and trims the log afterwards as its policy says (EvictLocked).
func (h *History[V]) PutLocked(key string, rev int64, v V, del bool) (ok bool) {
	if rev < h.seen {
		return false // already seen; a backend never goes back
	}
	rec := h.records[key]
	prev, _, exists := rec.latest()
	c := Change[V]{Rev: rev, Cur: v, Prev: prev}
	if h.cfg.Timestamps {
		c.stamp = h.Now() << kindBits
	}
	switch {
	case del && !exists:
		h.advanceLocked(rev)
		return false
	case del:
		c.stamp |= int64(deleted)
		h.index.SetLive(key, false)
	case exists:
		c.stamp |= int64(modified)
	default:
		c.stamp |= int64(added)
		if rec != nil {
			h.index.SetLive(key, true)
		}
	}
	if rec == nil {
		rec = &record[V]{key: key}
		h.records[key] = rec
		h.index.Insert(rec, true)
	}
	c.rec = rec
	rec.add(version[V]{rev: rev, deleted: del, val: v})
	h.log = append(h.log, c)
	h.advanceLocked(rev)
	h.groupsOf(rec.key, (*wakeGroup).wake)
	if len(h.stalled) > 0 {
		h.closeLaggingLocked(h.Now())
	}
	return true
}

// EvictLocked drops the oldest changes while over reports that the log
// must lose the change c it is given, with size changes held, and raises
// the read floor to at least floor; records keep only the versions a read
// at or after the floor can see. A watcher that has not read a dropped
// change yet is closed without an error (see Watcher). The caller holds the
// lock for writing.
func (h *History[V]) EvictLocked(over func(c *Change[V], size int) bool, floor int64) {
	n := 0
	for n < len(h.log) && over(&h.log[n], len(h.log)-n) {
		h.watchFloor = max(h.watchFloor, h.log[n].Rev)
		n++
	}
	h.floor = max(h.floor, h.watchFloor, min(floor, h.seen))
	if n == 0 {
		return
	}
	var gone []string
	for i := range h.log[:n] {
		key := h.log[i].rec.key
		if rec := h.records[key]; rec != nil && rec.compact(h.floor) {
			delete(h.records, key)
			gone = append(gone, key)
		}
		evicted := h.firstSeq + uint64(i) + 1
		h.groupsOf(key, func(g *wakeGroup) { g.evicted = evicted })
	}
	// One sweep of the index beats many deletes from it when a compaction
	// drops many keys at once.
	if len(gone) > 64 {
		h.index.DeleteFunc((*record[V]).empty)
	} else {
		for _, key := range gone {
			h.index.Delete(key)
		}
	}
	clear(h.log[:n])
	h.log = h.log[n:]
	h.firstSeq += uint64(n)
}

// CompactLocked drops the history before rev, as a compaction of etcd does:
// reads at older revisions, and watches that would need changes before
// rev, are refused afterwards. Running watches are not ended, as etcd does
// not end a watch that has caught up: the changes one has not read yet stay
// in the log until it has (the next compaction drops them), and so do the
// versions their keys had. The caller holds the lock for writing.
func (h *History[V]) CompactLocked(rev int64) {
	rev = min(rev, h.seen)
	// The changes before rev, and of them those every watcher has read.
	before := sort.Search(len(h.log), func(i int) bool { return h.log[i].Rev >= rev })
	if before == 0 && rev <= h.floor {
		return
	}
	if before > 0 {
		h.watchFloor = max(h.watchFloor, h.log[before-1].Rev)
	}
	unread := h.firstSeq + uint64(before)
	for w := range h.watchers {
		if w.epoch == h.epoch {
			unread = min(unread, w.cursor)
		}
	}
	n := max(unread, h.firstSeq) - h.firstSeq // a watcher behind has missed changes already
	h.EvictLocked(func(*Change[V], int) bool {
		if n == 0 {
			return false
		}
		n--
		return true
	}, rev)
}

// WaitRevision waits until the history has everything up to rev, for at
// most d. onWait, when not nil, runs once the caller counts as waiting
// (see Waiting). reached is false, without an error, when d passed or the
// history was reset; the error is ctx's, or ErrClosed.
func (h *History[V]) WaitRevision(ctx context.Context, rev int64, d time.Duration, onWait func()) (reached bool, err error) {
	if h.rev.Load() >= rev {
		return true, nil
	}
	h.revWaiters.Add(1)
	defer h.revWaiters.Add(-1)
	if onWait != nil {
		onWait()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		h.RLock()
		seen, wake, ready := h.seen, h.revWake, h.ready.Load()
		h.RUnlock()
		switch {
		case seen >= rev:
			return true, nil
		case !ready:
			return false, nil
		}
		select {
		case <-wake:
		case <-timer.C:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		case <-h.done:
			return false, ErrClosed
		}
	}
}

// Waiting reports how many callers wait in WaitRevision.
func (h *History[V]) Waiting() int64 { return h.revWaiters.Load() }

// Close ends every watch; later watches fail with ErrClosed, and waiters
// return it.
func (h *History[V]) Close() {
	h.Lock()
	if h.closed {
		h.Unlock()
		return
	}
	h.closed = true
	close(h.done)
	ws := make([]*Watcher[V], 0, len(h.watchers))
	for w := range h.watchers {
		ws = append(ws, w)
	}
	h.Unlock()
	for _, w := range ws {
		w.Stop()
	}
	h.ticks.Wait()
}

// Stats reports what the history holds: changes in the log, versions in
// the records, and keys, for tests of its owners' policies.
func (h *History[V]) Stats() (changes, versions, keys int) {
	h.RLock()
	defer h.RUnlock()
	for _, r := range h.records {
		versions += r.versions()
	}
	return len(h.log), versions, h.index.Len()
}
