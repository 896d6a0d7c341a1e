package cacher

import "github.com/apikit-dev/apikit/storage"

// value is one value of one key as the cache holds it (a tombstone's has
// no bytes). Values are immutable once made: the records, the window and
// the watchers share them, so a change costs one allocation whatever the
// number of readers.
type value struct {
	data []byte
	// memo is this value's scratch space, where the registry keeps its
	// decoded form, its JSON per served version and its selectable
	// attributes. A new value gets a new memo; a tombstone's is for the
	// last value as of the delete, what its Deleted event reports.
	memo *storage.Memo
	// own is memo when the event brings none (the backend's never do):
	// in the value's allocation, a LIST that has just read the value
	// finds its memo beside it rather than in an allocation of its own,
	// one cache miss fewer per item; 64 bytes with the memo's 32.
	own storage.Memo
}

// newValue returns the value an event of the backend carries, with the
// event's memo when it has one.
func newValue(ev storage.Event, deleted bool) *value {
	v := &value{memo: ev.Memo}
	if v.memo == nil {
		v.memo = &v.own
	}
	if !deleted {
		v.data = ev.Value
	}
	return v
}

// Data implements history.Value.
func (v *value) Data() []byte { return v.data }

// Memo implements history.Value.
func (v *value) Memo() *storage.Memo { return v.memo }

// KeyValue implements history.Value.
func (v *value) KeyValue(key string, rev int64) storage.KeyValue {
	return storage.KeyValue{Key: key, Value: v.data, Revision: rev, Memo: v.memo}
}
