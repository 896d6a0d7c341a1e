package keyindex

import (
	"fmt"
	"maps"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

type rec struct{ key string }

func newIndex() *Index[*rec] { return New(func(r *rec) string { return r.key }) }

// TestIndex checks the index against a sorted slice through random
// inserts, deletes, live flags, range walks and counts, across many block
// splits and merges.
func TestIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := newIndex()
	var ref []string
	live := map[string]bool{}
	key := func() string { return fmt.Sprintf("/k/%05d", rng.IntN(20000)) }
	check := func() {
		t.Helper()
		if x.Len() != len(ref) {
			t.Fatalf("Len %d, want %d", x.Len(), len(ref))
		}
		for _, blk := range x.blocks {
			if len(blk.recs) == 0 || len(blk.recs) > blockSize || len(blk.live) != len(blk.recs) {
				t.Fatalf("block of %d records, %d flags", len(blk.recs), len(blk.live))
			}
		}
		for range 50 {
			from := key()
			prefix := from[:len(from)-rng.IntN(4)]
			if rng.IntN(4) == 0 {
				prefix = "/k/"
			}
			if rng.IntN(4) == 0 {
				from = ""
			}
			want := 0
			for _, k := range ref {
				if k >= from && strings.HasPrefix(k, prefix) && live[k] {
					want++
				}
			}
			if got := x.CountLive(from, prefix); got != want {
				t.Fatalf("CountLive(%q, %q) = %d, want %d", from, prefix, got, want)
			}
			checkUnder(t, x, ref, from, prefix)
		}
		for range 20 {
			from := key()
			i, _ := slices.BinarySearch(ref, from)
			var got []string
			for r := range x.From(from) {
				if len(got) == 30 {
					break
				}
				got = append(got, r.key)
			}
			if want := ref[i:min(i+30, len(ref))]; !slices.Equal(got, want) {
				t.Fatalf("From(%q) = %v, want %v", from, got, want)
			}
		}
	}
	for round := range 20 {
		for range 1000 {
			k := key()
			i, found := slices.BinarySearch(ref, k)
			if found {
				continue
			}
			ref = slices.Insert(ref, i, k)
			live[k] = rng.IntN(3) > 0
			x.Insert(&rec{key: k}, live[k])
		}
		check()
		for range 500 {
			// Flip keys that are there and some that are not.
			k := key()
			if _, found := slices.BinarySearch(ref, k); found {
				live[k] = !live[k]
				x.SetLive(k, live[k])
			} else {
				x.SetLive(k, true)
			}
		}
		check()
		switch round % 3 {
		case 1:
			// Delete one by one, including keys that are absent.
			for range 700 {
				k := key()
				x.Delete(k)
				if i, found := slices.BinarySearch(ref, k); found {
					ref = slices.Delete(ref, i, i+1)
					delete(live, k)
				}
			}
			check()
		case 2:
			digit := fmt.Sprint(round % 10)
			x.DeleteFunc(func(r *rec) bool { return strings.HasSuffix(r.key, digit) })
			ref = slices.DeleteFunc(ref, func(k string) bool { return strings.HasSuffix(k, digit) })
			maps.DeleteFunc(live, func(k string, _ bool) bool { return strings.HasSuffix(k, digit) })
			check()
		}
	}
	for _, k := range slices.Clone(ref) {
		x.Delete(k)
		delete(live, k)
	}
	ref = nil
	check()
	if len(x.blocks) != 0 {
		t.Fatalf("%d blocks left in an empty index", len(x.blocks))
	}
	for range x.From("") {
		t.Fatal("empty index yields a record")
	}
}

// TestInOrderFillsBlocks: keys inserted in order (a list from etcd, names
// with a counter) fill their blocks, where splits would leave each half
// empty and the index twice its size.
func TestInOrderFillsBlocks(t *testing.T) {
	x := newIndex()
	for i := range 5000 {
		x.Insert(&rec{key: fmt.Sprintf("/k/%05d", i)}, i%2 == 0)
	}
	if want := (5000 + blockSize - 1) / blockSize; len(x.blocks) != want {
		t.Fatalf("%d blocks for 5,000 keys inserted in order, want %d", len(x.blocks), want)
	}
	if got := x.CountLive("/k/01000", "/k/"); got != 2000 {
		t.Fatalf("CountLive from /k/01000 = %d, want 2000", got)
	}
}

// BenchmarkInsertDelete inserts and deletes one random key in an index of
// a fixed size: what the first write of a key and the end of its history
// cost.
func BenchmarkInsertDelete(b *testing.B) {
	for _, n := range []int{1000, 100000, 1000000} {
		rng := rand.New(rand.NewPCG(1, 2))
		x := newIndex()
		for range n {
			x.Insert(&rec{key: fmt.Sprintf("/k/%016x", rng.Uint64())}, true)
		}
		b.Run(fmt.Sprintf("size=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				k := fmt.Sprintf("/k/%016x", rng.Uint64())
				x.Insert(&rec{key: k}, true)
				x.Delete(k)
			}
		})
	}
}

func BenchmarkWalk(b *testing.B) {
	x := newIndex()
	for i := range 100000 {
		x.Insert(&rec{key: fmt.Sprintf("/k/%06d", i)}, true)
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for range x.From("/k/050000") {
			if n++; n == 1000 {
				break
			}
		}
	}
}

// TestCountLive counts small indexes, where every record is in one block
// that never split.
func TestCountLive(t *testing.T) {
	for _, tc := range []struct {
		name         string
		keys         []string // inserted in this order; "-" marks one not live
		setDead      []string
		from, prefix string
		want         int
	}{
		{"one live key", []string{"/a"}, nil, "", "/", 1},
		{"one key not live", []string{"/a-"}, nil, "", "/", 0},
		{"from a key on", []string{"/c", "/a", "/b"}, nil, "/b", "/", 2},
		{"under a prefix", []string{"/a/x", "/ab/y", "/a/y", "/a0", "/a"}, nil, "", "/a/", 2},
		{"under a prefix from a key on", []string{"/a/x", "/ab/y", "/a/y", "/a/z"}, nil, "/a/x\x00", "/a/", 2},
		{"a start below the prefix", []string{"/a", "/b/x", "/c"}, nil, "/a", "/b/", 1},
		{"a start past the prefix", []string{"/a", "/b/x", "/c"}, nil, "/c", "/b/", 0},
		{"past the last key", []string{"/a", "/b"}, nil, "/c", "/", 0},
		{"no key has the prefix", []string{"/a", "/c"}, nil, "", "/b", 0},
		{"a key set dead", []string{"/a", "/b", "/c"}, []string{"/b", "/x"}, "", "/", 2},
		{"a dead key among live", []string{"/a/1", "/a/2-", "/a/3", "/b"}, nil, "", "/a/", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newIndex()
			for _, k := range tc.keys {
				k, dead := strings.CutSuffix(k, "-")
				x.Insert(&rec{key: k}, !dead)
			}
			for _, k := range tc.setDead {
				x.SetLive(k, false)
			}
			if got := x.CountLive(tc.from, tc.prefix); got != tc.want {
				t.Fatalf("CountLive(%q, %q) = %d, want %d", tc.from, tc.prefix, got, tc.want)
			}
			var all []string
			for _, k := range tc.keys {
				all = append(all, strings.TrimSuffix(k, "-"))
			}
			slices.Sort(all)
			checkUnder(t, x, all, tc.from, tc.prefix)
		})
	}
}

// checkUnder checks x.Under(from, prefix) against the sorted keys ref, and
// that it stops when its consumer does.
func checkUnder(t *testing.T, x *Index[*rec], ref []string, from, prefix string) {
	t.Helper()
	var want, got []string
	for _, k := range ref {
		if k >= from && strings.HasPrefix(k, prefix) {
			want = append(want, k)
		}
	}
	for r := range x.Under(from, prefix) {
		got = append(got, r.key)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Under(%q, %q) = %d keys %q..., want %d %q...", from, prefix, len(got), got[:min(5, len(got))], len(want), want[:min(5, len(want))])
	}
	n := 0
	for range x.Under(from, prefix) {
		if n++; n == 2 {
			break
		}
	}
	if n != min(2, len(want)) {
		t.Fatalf("Under(%q, %q) yielded %d records to a consumer that stopped at 2", from, prefix, n)
	}
}

// TestUnderReadsTheEndsOnly: a walk of the records under a prefix reads
// the keys of two binary searches, not one key per record (each key is an
// allocation of its own: a cache miss per record in a large list).
func TestUnderReadsTheEndsOnly(t *testing.T) {
	reads := 0
	x := New(func(r *rec) string { reads++; return r.key })
	const n = 5000
	for i := range n {
		x.Insert(&rec{key: fmt.Sprintf("/b/%05d", i)}, true)
	}
	x.Insert(&rec{key: "/a"}, true)
	x.Insert(&rec{key: "/c"}, true)
	for from, want := range map[string]int{"": n, "/b/02500": n / 2} {
		reads = 0
		got := 0
		for range x.Under(from, "/b/") {
			got++
		}
		if got != want {
			t.Fatalf("Under(%q, /b/) yielded %d records, want %d", from, got, want)
		}
		// Two binary searches over the blocks and inside one block each.
		if limit := 4 * (bits.Len(uint(n)) + 1); reads > limit {
			t.Errorf("Under(%q, /b/) read %d keys for %d records, want at most %d", from, reads, got, limit)
		}
	}
}
