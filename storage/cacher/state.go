package cacher

import (
	"sort"

	"github.com/apikit-dev/apikit/storage"
)

// version is one value of one key as the cache holds it. A delete is a
// version too (a tombstone), so that reads at older revisions still see the
// value before it. Versions are immutable once made: events, list results
// and watchers share them.
type version struct {
	rev   int64
	value []byte
	// memo is this value's scratch space, where the registry keeps its
	// decoded form, its JSON per served version and its selectable
	// attributes. A new value gets a new memo; a tombstone's is for the
	// last value as of the delete, what its Deleted event reports.
	memo    *storage.Memo
	deleted bool
}

// record is the history of one key within the window, oldest first.
type record struct {
	key      string
	versions []*version
}

func recordKey(r *record) string { return r.key }

// latest returns the key's current value, nil when it has none.
func (r *record) latest() *version {
	if r == nil || len(r.versions) == 0 {
		return nil
	}
	if v := r.versions[len(r.versions)-1]; !v.deleted {
		return v
	}
	return nil
}

// at returns the value the key had at rev, nil when it had none.
func (r *record) at(rev int64) *version {
	n := len(r.versions)
	if n > 0 && r.versions[n-1].rev <= rev {
		if v := r.versions[n-1]; !v.deleted {
			return v
		}
		return nil
	}
	i := sort.Search(n, func(i int) bool { return r.versions[i].rev > rev })
	if i == 0 {
		return nil
	}
	if v := r.versions[i-1]; !v.deleted {
		return v
	}
	return nil
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

// eventType is the kind of a change in the window.
type eventType uint8

const (
	added eventType = iota
	modified
	deleted
)

// event is one change in the window. It shares its versions with the
// records.
type event struct {
	key string
	// cur is the new version (a tombstone for a delete); prev the one
	// before, nil for an add.
	cur, prev *version
	typ       eventType
	// at is when the cache applied the change, in nanoseconds since the
	// cacher started: a dynamic window keeps changes for a while.
	at int64
}

// toStorage returns the event as watchers see it.
func (e *event) toStorage() storage.Event {
	switch e.typ {
	case added:
		return storage.Event{Type: storage.Added, Key: e.key, Value: e.cur.value, Revision: e.cur.rev, Memo: e.cur.memo}
	case modified:
		return storage.Event{Type: storage.Modified, Key: e.key, Value: e.cur.value, PrevValue: e.prev.value,
			Revision: e.cur.rev, Memo: e.cur.memo}
	default:
		return storage.Event{Type: storage.Deleted, Key: e.key, Value: e.prev.value, Revision: e.cur.rev, Memo: e.cur.memo}
	}
}
