package keyindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

type rec struct{ key string }

func newIndex() *Index[*rec] { return New(func(r *rec) string { return r.key }) }

// TestIndex checks the index against a sorted slice through random
// inserts, deletes and range walks, across many block splits and merges.
func TestIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := newIndex()
	var ref []string
	key := func() string { return fmt.Sprintf("/k/%05d", rng.IntN(20000)) }
	check := func() {
		t.Helper()
		if x.Len() != len(ref) {
			t.Fatalf("Len %d, want %d", x.Len(), len(ref))
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
			x.Insert(&rec{key: k})
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
				}
			}
			check()
		case 2:
			digit := fmt.Sprint(round % 10)
			x.DeleteFunc(func(r *rec) bool { return strings.HasSuffix(r.key, digit) })
			ref = slices.DeleteFunc(ref, func(k string) bool { return strings.HasSuffix(k, digit) })
			check()
		}
	}
	for _, k := range slices.Clone(ref) {
		x.Delete(k)
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

// BenchmarkInsertDelete inserts and deletes one random key in an index of
// a fixed size: what the first write of a key and the end of its history
// cost.
func BenchmarkInsertDelete(b *testing.B) {
	for _, n := range []int{1000, 100000, 1000000} {
		rng := rand.New(rand.NewPCG(1, 2))
		x := newIndex()
		for range n {
			x.Insert(&rec{key: fmt.Sprintf("/k/%016x", rng.Uint64())})
		}
		b.Run(fmt.Sprintf("size=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				k := fmt.Sprintf("/k/%016x", rng.Uint64())
				x.Insert(&rec{key: k})
				x.Delete(k)
			}
		})
	}
}

func BenchmarkWalk(b *testing.B) {
	x := newIndex()
	for i := range 100000 {
		x.Insert(&rec{key: fmt.Sprintf("/k/%06d", i)})
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
