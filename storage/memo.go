package storage

import "sync/atomic"

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
	// more holds the forms beyond the slots, in a Memo of its own made
	// when a value first has more forms than slots, which few ever have:
	// most cached values only ever have their JSON made (a GET, a LIST, a
	// watch event), and the watch cache keeps a memo per cached value, in
	// the value's allocation (32 bytes where six slots and a sync.Map
	// pointer were 56, and the value 64 bytes instead of 96).
	more atomic.Pointer[Memo]
}

// memoSlots is how many entries a Memo keeps in slots before its next
// Memo: the registry's JSON of a served version, its decoded object and
// selectable attributes.
const memoSlots = 3

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
	return m.more.Load().Load(key) // nil when there is no more
}

// LoadOrStore returns the existing value for key if present; otherwise it
// stores and returns v. On a nil Memo it returns v.
func (m *Memo) LoadOrStore(key, v any) any {
	if m == nil {
		return v
	}
	return m.loadOrStore(key, v, nil)
}

// MemoLoadOrStore returns the value m keeps under key, a *V, storing a copy
// of v there first when there is none; on a nil Memo it returns a copy of
// v. Load returns the same *V. The copy shares one allocation with the
// memo's entry for it: a value larger than a word stored with LoadOrStore
// is boxed in an allocation of its own, which a lookup reaches through the
// entry, one more cache miss per item of a LIST that reads every item's
// JSON from its memo (and 16 to 32 bytes of the memory each cached value
// keeps).
func MemoLoadOrStore[V any](m *Memo, key any, v V) *V {
	if m == nil {
		p := new(V) // not &v, which would move v to the heap on every call
		*p = v
		return p
	}
	in := &memoInline[V]{value: v}
	in.entry = memoEntry{key: key, value: &in.value}
	return m.loadOrStore(key, &in.value, &in.entry).(*V)
}

// memoInline is an entry and its value in one allocation (MemoLoadOrStore).
type memoInline[V any] struct {
	entry memoEntry
	value V
}

// loadOrStore is LoadOrStore with the entry to store for key and v made by
// the caller (mine, nil: made here when a slot is free).
func (m *Memo) loadOrStore(key, v any, mine *memoEntry) any {
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
		m.more.CompareAndSwap(nil, new(Memo))
		more = m.more.Load()
	}
	return more.loadOrStore(key, v, mine)
}
