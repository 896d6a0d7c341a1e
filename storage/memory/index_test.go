package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestKeyIndex checks the index against a sorted slice through random
// inserts, deletes and range walks, across many block splits.
func TestKeyIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var x keyIndex
	var ref []string
	key := func() string { return fmt.Sprintf("/k/%05d", rng.IntN(20000)) }
	check := func() {
		t.Helper()
		if x.len() != len(ref) {
			t.Fatalf("len %d, want %d", x.len(), len(ref))
		}
		for _, blk := range x.blocks {
			if len(blk) == 0 || len(blk) > blockSize {
				t.Fatalf("block of %d records", len(blk))
			}
		}
		for range 20 {
			from := key()
			i, _ := slices.BinarySearch(ref, from)
			var got []string
			for r := range x.from(from) {
				if len(got) == 30 {
					break
				}
				got = append(got, r.key)
			}
			want := ref[i:min(i+30, len(ref))]
			if !slices.Equal(got, want) {
				t.Fatalf("from(%q) = %v, want %v", from, got, want)
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
			x.insert(&record{key: k})
		}
		check()
		if round%3 == 2 {
			digit := fmt.Sprint(round % 10)
			x.deleteFunc(func(r *record) bool { return strings.HasSuffix(r.key, digit) })
			ref = slices.DeleteFunc(ref, func(k string) bool { return strings.HasSuffix(k, digit) })
			check()
		}
	}
	x.deleteFunc(func(*record) bool { return true })
	ref = nil
	check()
	for range x.from("") {
		t.Fatal("empty index yields a record")
	}
}

// sortedSlice is the plain alternative to keyIndex, kept to measure
// against.
type sortedSlice []*record

func (s *sortedSlice) insert(r *record) {
	i, _ := slices.BinarySearchFunc(*s, r.key, func(a *record, k string) int { return strings.Compare(a.key, k) })
	*s = slices.Insert(*s, i, r)
}

func (s *sortedSlice) remove(key string) {
	i, _ := slices.BinarySearchFunc(*s, key, func(a *record, k string) int { return strings.Compare(a.key, k) })
	*s = slices.Delete(*s, i, i+1)
}

// BenchmarkIndexInsert inserts and removes one random key in an index of
// a fixed size: the cost the first write of a key pays.
func BenchmarkIndexInsert(b *testing.B) {
	for _, n := range []int{1000, 100000, 1000000} {
		rng := rand.New(rand.NewPCG(1, 2))
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("/k/%016x", rng.Uint64())
		}
		b.Run(fmt.Sprintf("blocks/size=%d", n), func(b *testing.B) {
			var x keyIndex
			for _, k := range keys {
				x.insert(&record{key: k})
			}
			b.ReportAllocs()
			for b.Loop() {
				k := fmt.Sprintf("/k/%016x", rng.Uint64())
				x.insert(&record{key: k})
				x.deleteBlockOf(k)
			}
		})
		b.Run(fmt.Sprintf("sorted-slice/size=%d", n), func(b *testing.B) {
			var s sortedSlice
			for _, k := range keys {
				s.insert(&record{key: k})
			}
			b.ReportAllocs()
			for b.Loop() {
				k := fmt.Sprintf("/k/%016x", rng.Uint64())
				s.insert(&record{key: k})
				s.remove(k)
			}
		})
	}
}

// deleteBlockOf removes key from its block alone, so that the benchmark
// measures insertion, not deleteFunc's full pass.
func (x *keyIndex) deleteBlockOf(key string) {
	b, i := x.search(key)
	x.blocks[b] = slices.Delete(x.blocks[b], i, i+1)
	x.n--
	if len(x.blocks[b]) == 0 {
		x.blocks = slices.Delete(x.blocks, b, b+1)
	}
}

func BenchmarkIndexWalk(b *testing.B) {
	var x keyIndex
	for i := range 100000 {
		x.insert(&record{key: fmt.Sprintf("/k/%06d", i)})
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for range x.from("/k/050000") {
			if n++; n == 1000 {
				break
			}
		}
	}
}
