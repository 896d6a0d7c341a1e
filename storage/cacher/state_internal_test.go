package cacher

import (
	"testing"
	"unsafe"

	"github.com/apikit-dev/apikit/storage"
)

// TestValueKeepsItsMemo: a value the backend's event brings without a memo
// keeps its memo in its own allocation (one per change of 64 bytes, where
// the value and a separate memo were 32 + 64), and one that brings a memo
// (a Deleted event's) keeps that one.
func TestValueKeepsItsMemo(t *testing.T) {
	if size := unsafe.Sizeof(value{}); size > 64 {
		t.Errorf("a value is %d bytes, want at most 64", size)
	}
	ev := storage.Event{Type: storage.Added, Key: "/k", Value: []byte("{}"), Revision: 2}
	var v *value
	if allocs := testing.AllocsPerRun(100, func() { v = newValue(ev, false) }); allocs != 1 {
		t.Errorf("newValue made %v allocations, want 1", allocs)
	}
	if v.Memo() != &v.own {
		t.Error("the value's memo is not its own")
	}
	v.Memo().LoadOrStore("k", 1)
	if other := newValue(ev, false); other.Memo() == v.Memo() {
		t.Error("two values share a memo")
	}
	ev.Memo = storage.NewMemo()
	if v := newValue(ev, true); v.Memo() != ev.Memo || v.Data() != nil {
		t.Errorf("tombstone: memo %p data %q, want the event's memo %p and no data", v.Memo(), v.Data(), ev.Memo)
	}
}
