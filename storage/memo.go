package storage

import "sync"

// Memo is scratch space attached by a caching layer to one value of one key.
// The registry keeps derived forms of the value there (the decoded object,
// its JSON per served version, its selectable attributes), so that a value
// read by a thousand requests is decoded and encoded once.
//
// Everything stored in a Memo must be immutable once stored: readers share it
// without copying. A nil *Memo is valid and stores nothing.
type Memo struct {
	m sync.Map
}

// NewMemo returns an empty Memo.
func NewMemo() *Memo { return &Memo{} }

// Load returns the value stored under key.
func (m *Memo) Load(key any) (any, bool) {
	if m == nil {
		return nil, false
	}
	return m.m.Load(key)
}

// LoadOrStore returns the existing value for key if present; otherwise it
// stores and returns v. On a nil Memo it returns v.
func (m *Memo) LoadOrStore(key, v any) any {
	if m == nil {
		return v
	}
	actual, _ := m.m.LoadOrStore(key, v)
	return actual
}
