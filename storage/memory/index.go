package memory

import (
	"iter"
	"slices"
)

// blockSize bounds the records of one block of the key index. An insert
// moves at most this many pointers, and a lookup does two binary searches.
const blockSize = 512

// keyIndex keeps records sorted by key for lists, as a list of sorted
// blocks: a plain sorted slice moves half the store on every insert (70 µs
// per Create at a million keys), while blocks keep it flat and still let a
// list walk the keys in order with no pointer chasing inside a block (see
// BenchmarkIndexInsert). Every block is non-empty.
type keyIndex struct {
	blocks [][]*record
	n      int
}

// search returns the position of the first record whose key is >= key.
func (x *keyIndex) search(key string) (b, i int) {
	// The first block whose last key is >= key holds the position.
	b, _ = slices.BinarySearchFunc(x.blocks, key, func(blk []*record, k string) int {
		return compare(blk[len(blk)-1].key, k)
	})
	if b == len(x.blocks) {
		return b, 0
	}
	blk := x.blocks[b]
	i, _ = slices.BinarySearchFunc(blk, key, func(r *record, k string) int { return compare(r.key, k) })
	return b, i
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// insert adds rec, whose key must not be in the index yet.
func (x *keyIndex) insert(rec *record) {
	x.n++
	if len(x.blocks) == 0 {
		x.blocks = append(x.blocks, []*record{rec})
		return
	}
	b, i := x.search(rec.key)
	if b == len(x.blocks) {
		// Past the last key: append to the last block.
		b = len(x.blocks) - 1
		i = len(x.blocks[b])
	}
	blk := slices.Insert(x.blocks[b], i, rec)
	if len(blk) <= blockSize {
		x.blocks[b] = blk
		return
	}
	// Split in two halves, each with room to grow.
	half := len(blk) / 2
	left := make([]*record, half, blockSize)
	copy(left, blk[:half])
	right := make([]*record, len(blk)-half, blockSize)
	copy(right, blk[half:])
	x.blocks[b] = left
	x.blocks = slices.Insert(x.blocks, b+1, right)
}

// deleteFunc removes the records del reports, keeping the order.
func (x *keyIndex) deleteFunc(del func(*record) bool) {
	out := x.blocks[:0]
	x.n = 0
	for _, blk := range x.blocks {
		blk = slices.DeleteFunc(blk, del)
		if len(blk) > 0 {
			out = append(out, blk)
			x.n += len(blk)
		}
	}
	clear(x.blocks[len(out):])
	x.blocks = out
}

// from yields the records from the first whose key is >= key, in order.
func (x *keyIndex) from(key string) iter.Seq[*record] {
	return func(yield func(*record) bool) {
		b, i := x.search(key)
		for ; b < len(x.blocks); b, i = b+1, 0 {
			for _, r := range x.blocks[b][i:] {
				if !yield(r) {
					return
				}
			}
		}
	}
}

// len returns the number of records.
func (x *keyIndex) len() int { return x.n }
