package storage

import (
	"sync"
	"sync/atomic"
)

// Memo is scratch space attached by a caching layer to one value of one key.
// The registry keeps derived forms of the value there (the decoded object,
// its JSON per served version, its selectable attributes), so that a value
// read by a thousand requests is decoded and encoded once.
//
// Everything stored in a Memo must be immutable once stored: readers share it
// without copying. A nil *Memo is valid and stores nothing.
type Memo struct {
	// A value has a handful of derived forms: they live in slots, filled
	// in order and never emptied, which a lookup scans without a lock. A
	// list of 5,000 cached objects makes two lookups per object, so this
	// is on the hot path: a sync.Map lookup costs several times as much.
	slots [memoSlots]atomic.Pointer[memoEntry]
	// more holds what does not fit in the slots, made when a value first
	// has more forms than slots, which few ever have: a sync.Map in every
	// memo (48 bytes) made each 96 bytes instead of 64, and the watch
	// cache keeps a memo per cached value.
	more atomic.Pointer[sync.Map]
}

// memoSlots is how many entries a Memo keeps in slots: the registry's
// decoded object, attributes and the JSON and converted object of two
// served versions.
const memoSlots = 6

type memoEntry struct {
	key, value any
}

// NewMemo returns an empty Memo.
func NewMemo() *Memo { return &Memo{} }

// Load returns the value stored under key.
func (m *Memo) Load(key any) (any, bool) {
	if m == nil {
		return nil, false
	}
	for i := range m.slots {
		e := m.slots[i].Load()
		if e == nil {
			return nil, false // slots fill in order: key is in none
		}
		if e.key == key {
			return e.value, true
		}
	}
	if more := m.more.Load(); more != nil {
		return more.Load(key)
	}
	return nil, false
}

// LoadOrStore returns the existing value for key if present; otherwise it
// stores and returns v. On a nil Memo it returns v.
func (m *Memo) LoadOrStore(key, v any) any {
	if m == nil {
		return v
	}
	var mine *memoEntry
	for i := range m.slots {
		e := m.slots[i].Load()
		if e == nil {
			if mine == nil {
				mine = &memoEntry{key: key, value: v}
			}
			if m.slots[i].CompareAndSwap(nil, mine) {
				return v
			}
			e = m.slots[i].Load() // another writer took the slot
		}
		if e.key == key {
			return e.value
		}
	}
	more := m.more.Load()
	if more == nil {
		m.more.CompareAndSwap(nil, new(sync.Map))
		more = m.more.Load()
	}
	actual, _ := more.LoadOrStore(key, v)
	return actual
}
