package cacher

import "github.com/apikit-dev/apikit/storage"

// entry is one value as the cache holds it: its records, its window and
// its watchers share it, so a change costs one allocation whatever the
// number of readers. A tombstone's entry has no value; its memo is for the
// last value as of the delete, what its Deleted event reports.
type entry struct {
	value []byte
	// memo is this value's scratch space, where the registry keeps its
	// decoded form, its JSON per served version and its selectable
	// attributes. A new value gets a new memo.
	memo *storage.Memo
}

func newEntry(value []byte, memo *storage.Memo) *entry {
	if memo == nil {
		memo = storage.NewMemo()
	}
	return &entry{value: value, memo: memo}
}

// Data implements history.Payload.
func (e *entry) Data() []byte { return e.value }

// Memo implements history.Payload.
func (e *entry) Memo() *storage.Memo { return e.memo }
