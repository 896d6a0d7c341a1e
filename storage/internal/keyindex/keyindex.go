// Package keyindex keeps records sorted by key for the in-memory stores
// (storage/memory and storage/cacher): lists walk it in key order from any
// start key.
package keyindex

import (
	"iter"
	"slices"
	"strings"
)

// blockSize bounds the records of one block. An insert or a delete moves at
// most this many pointers, and a lookup does two binary searches.
const blockSize = 512

// Index keeps records sorted by key as a list of sorted blocks: a plain
// sorted slice moves half the store on every insert (70 µs per insert at a
// million keys), while blocks keep it flat and still let a list walk the keys
// in order with no pointer chasing inside a block. Every block is non-empty.
// The zero value is not usable; call New. An Index is not safe for
// concurrent writes.
type Index[R any] struct {
	key    func(R) string
	blocks [][]R
	n      int
}

// New returns an empty Index of records whose key key returns.
func New[R any](key func(R) string) *Index[R] {
	return &Index[R]{key: key}
}

// search returns the position of the first record whose key is >= key.
func (x *Index[R]) search(key string) (b, i int) {
	// The first block whose last key is >= key holds the position.
	b, _ = slices.BinarySearchFunc(x.blocks, key, func(blk []R, k string) int {
		return strings.Compare(x.key(blk[len(blk)-1]), k)
	})
	if b == len(x.blocks) {
		return b, 0
	}
	i, _ = slices.BinarySearchFunc(x.blocks[b], key, func(r R, k string) int { return strings.Compare(x.key(r), k) })
	return b, i
}

// Insert adds rec, whose key must not be in the index yet.
func (x *Index[R]) Insert(rec R) {
	x.n++
	if len(x.blocks) == 0 {
		x.blocks = append(x.blocks, []R{rec})
		return
	}
	b, i := x.search(x.key(rec))
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
	left := make([]R, half, blockSize)
	copy(left, blk[:half])
	right := make([]R, len(blk)-half, blockSize)
	copy(right, blk[half:])
	x.blocks[b] = left
	x.blocks = slices.Insert(x.blocks, b+1, right)
}

// Delete removes the record with key, if there is one.
func (x *Index[R]) Delete(key string) {
	b, i := x.search(key)
	if b == len(x.blocks) || x.key(x.blocks[b][i]) != key {
		return
	}
	x.n--
	blk := slices.Delete(x.blocks[b], i, i+1)
	if len(blk) > 0 {
		x.blocks[b] = blk
		return
	}
	x.blocks = slices.Delete(x.blocks, b, b+1)
}

// DeleteFunc removes the records del reports, keeping the order.
func (x *Index[R]) DeleteFunc(del func(R) bool) {
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

// From yields the records from the first whose key is >= key, in order.
// The index must not change while the sequence runs.
func (x *Index[R]) From(key string) iter.Seq[R] {
	return func(yield func(R) bool) {
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

// Len returns the number of records.
func (x *Index[R]) Len() int { return x.n }
