package storage

import (
	"fmt"
	"sync"
	"testing"
	"unsafe"
)

type memoKey struct{ version string }

func TestMemo(t *testing.T) {
	var nilMemo *Memo
	if _, ok := nilMemo.Load("a"); ok {
		t.Fatal("a nil Memo loads something")
	}
	if v := nilMemo.LoadOrStore("a", 1); v != 1 {
		t.Fatalf("LoadOrStore on a nil Memo = %v", v)
	}
	m := NewMemo()
	// More keys than slots, of several types, some equal in value but not
	// in type.
	const n = 3 * memoSlots
	for i := range n {
		for _, k := range []any{memoKey{fmt.Sprint(i)}, fmt.Sprint(i)} {
			if _, ok := m.Load(k); ok {
				t.Fatalf("Load(%v) before any store", k)
			}
			if got := m.LoadOrStore(k, i); got != i {
				t.Fatalf("first LoadOrStore(%v) = %v, want %d", k, got, i)
			}
			if got := m.LoadOrStore(k, -1); got != i {
				t.Fatalf("second LoadOrStore(%v) = %v, want the first value %d", k, got, i)
			}
		}
	}
	for i := range n {
		for _, k := range []any{memoKey{fmt.Sprint(i)}, fmt.Sprint(i)} {
			if got, ok := m.Load(k); !ok || got != i {
				t.Fatalf("Load(%v) = %v, %v; want %d", k, got, ok, i)
			}
		}
	}
}

// TestMemoConcurrent races writers for the same keys: each key keeps one
// value, the one every writer gets back.
func TestMemoConcurrent(t *testing.T) {
	for range 200 {
		m := NewMemo()
		const writers, keys = 8, 2 * memoSlots
		got := make([][keys]any, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for k := range keys {
					got[w][(k+w)%keys] = m.LoadOrStore((k+w)%keys, w)
				}
			})
		}
		wg.Wait()
		for k := range keys {
			v, ok := m.Load(k)
			if !ok {
				t.Fatalf("key %d lost", k)
			}
			for w := range writers {
				if got[w][k] != v {
					t.Fatalf("key %d: writer %d got %v, the memo holds %v", k, w, got[w][k], v)
				}
			}
		}
	}
}

// BenchmarkMemoLoad looks up the entries the registry keeps for a value
// read through a cache: its decoded object and its JSON.
func BenchmarkMemoLoad(b *testing.B) {
	type decodedKey struct{}
	m := NewMemo()
	m.LoadOrStore(decodedKey{}, 1)
	m.LoadOrStore(memoKey{"v1beta1"}, 2)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := m.Load(decodedKey{}); !ok {
			b.Fatal("lost")
		}
		if _, ok := m.Load(memoKey{"v1beta1"}); !ok {
			b.Fatal("lost")
		}
	}
}

// TestMemoSize: the watch cache keeps a memo per cached value, in the
// value's allocation, so a memo is at most 32 bytes (56 with six slots, 96
// with a sync.Map in it) and one allocation of its own.
func TestMemoSize(t *testing.T) {
	if size := unsafe.Sizeof(Memo{}); size > 32 {
		t.Errorf("a Memo is %d bytes, want at most 32", size)
	}
	if allocs := testing.AllocsPerRun(100, func() { sink = NewMemo() }); allocs != 1 {
		t.Errorf("NewMemo makes %v allocations, want 1", allocs)
	}
}

var sink *Memo

// TestMemoLoadOrStoreInline: a value stored with MemoLoadOrStore is the
// one every later lookup returns, in the entry's allocation, whether it
// went to a slot or beyond them, and a nil Memo hands back a copy.
func TestMemoLoadOrStoreInline(t *testing.T) {
	type parts struct{ a, b, c []byte }
	for _, tc := range []struct {
		name   string
		before int // entries stored first, filling slots
	}{
		{"first slot", 0},
		{"last slot", memoSlots - 1},
		{"beyond the slots", memoSlots + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemo()
			for i := range tc.before {
				m.LoadOrStore(memoKey{fmt.Sprint("other", i)}, i)
			}
			key := memoKey{"v1"}
			p := MemoLoadOrStore(m, key, parts{a: []byte("x")})
			if again := MemoLoadOrStore(m, key, parts{a: []byte("y")}); again != p {
				t.Errorf("a second store returned %p, want the first value %p", again, p)
			}
			v, ok := m.Load(key)
			if !ok || v.(*parts) != p {
				t.Fatalf("Load = %v, %v; want %p", v, ok, p)
			}
			if string(p.a) != "x" {
				t.Errorf("stored %q, want %q", p.a, "x")
			}
			for i := range tc.before {
				if v, ok := m.Load(memoKey{fmt.Sprint("other", i)}); !ok || v != i {
					t.Errorf("entry %d: %v, %v", i, v, ok)
				}
			}
		})
	}
	if p := MemoLoadOrStore[int](nil, memoKey{"v1"}, 7); p == nil || *p != 7 {
		t.Errorf("nil Memo: got %v, want a pointer to 7", p)
	}
	// One allocation for the entry and its value: LoadOrStore boxes a
	// value larger than a word in an allocation of its own.
	var key any = memoKey{"v1"}
	memos, next := make([]Memo, 101), 0
	allocs := testing.AllocsPerRun(100, func() {
		MemoLoadOrStore(&memos[next], key, parts{})
		next++
	})
	if allocs != 1 {
		t.Errorf("MemoLoadOrStore into an empty memo: %v allocations, want 1", allocs)
	}
}
