package cacher

import "github.com/apikit-dev/apikit/storage"

// version is one value of one key as the cache holds it. A delete is a
// version too (a tombstone), so that reads at older revisions still see the
// value before it. Versions are immutable once made: the records, the
// window and the watchers share them, so a change costs one allocation
// whatever the number of readers.
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

// newVersion returns the version an event of the backend makes, with the
// event's memo when it has one.
func newVersion(ev storage.Event, deleted bool) *version {
	memo := ev.Memo
	if memo == nil {
		memo = storage.NewMemo()
	}
	v := &version{rev: ev.Revision, memo: memo, deleted: deleted}
	if !deleted {
		v.value = ev.Value
	}
	return v
}

// Rev implements history.Version.
func (v *version) Rev() int64 { return v.rev }

// Deleted implements history.Version.
func (v *version) Deleted() bool { return v.deleted }

// Data implements history.Version.
func (v *version) Data() []byte { return v.value }

// Memo implements history.Version.
func (v *version) Memo() *storage.Memo { return v.memo }

func (v *version) keyValue(key string) storage.KeyValue {
	return storage.KeyValue{Key: key, Value: v.value, Revision: v.rev, Memo: v.memo}
}
