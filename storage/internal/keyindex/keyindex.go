// Package keyindex keeps records sorted by key for the in-memory stores
// (storage/memory and storage/cacher): lists walk it in key order from any
// start key, and count the live records of a key range without walking it.
package keyindex

import (
	"iter"
	"slices"
	"strings"
)

// blockSize bounds the records of one block. An insert or a delete moves at
// most this many pointers, and a lookup does two binary searches.
const blockSize = 512

// block is a run of records in key order, with each one's live flag beside
// it: a count inside a block reads bytes, never the records.
type block[R any] struct {
	recs  []R
	live  []bool // live[i] is recs[i]'s
	nlive int
}

// Index keeps records sorted by key as a list of sorted blocks: a plain
// sorted slice moves half the store on every insert (70 µs per insert at a
// million keys), while blocks keep it flat and still let a list walk the keys
// in order with no pointer chasing inside a block. Every block is non-empty.
//
// Each record is live or not, as its owner says (a key that exists at the
// latest revision, against one kept only for its history): CountLive counts
// the live records between two keys in O(log n + blockSize) from a Fenwick
// tree of the blocks' live counts, so that a paged list learns how many
// items follow its page without walking them.
//
// The zero value is not usable; call New. An Index is not safe for
// concurrent writes.
type Index[R any] struct {
	key    func(R) string
	blocks []block[R]
	n      int
	// fen is a Fenwick tree (1-based) of the blocks' live counts; rebuilt
	// when blocks come or go, updated in place when a count moves.
	fen   []int
	nlive int
}

// New returns an empty Index of records whose key key returns.
func New[R any](key func(R) string) *Index[R] {
	return &Index[R]{key: key}
}

// search returns the position of the first record whose key is >= key.
func (x *Index[R]) search(key string) (b, i int) {
	return x.searchFunc(func(k string) int { return strings.Compare(k, key) })
}

// searchFunc returns the position of the first record whose key cmp
// reports >= 0 for, cmp being monotonic in key order.
func (x *Index[R]) searchFunc(cmp func(key string) int) (b, i int) {
	// The first block whose last key is >= the target holds the position.
	b, _ = slices.BinarySearchFunc(x.blocks, 0, func(blk block[R], _ int) int {
		return cmp(x.key(blk.recs[len(blk.recs)-1]))
	})
	if b == len(x.blocks) {
		return b, 0
	}
	i, _ = slices.BinarySearchFunc(x.blocks[b].recs, 0, func(r R, _ int) int { return cmp(x.key(r)) })
	return b, i
}

// find returns the position of the record with key; ok is false when there
// is none.
func (x *Index[R]) find(key string) (b, i int, ok bool) {
	b, i = x.search(key)
	return b, i, b < len(x.blocks) && x.key(x.blocks[b].recs[i]) == key
}

// Insert adds rec, whose key must not be in the index yet; live says
// whether CountLive counts it.
func (x *Index[R]) Insert(rec R, live bool) {
	x.n++
	b, i := x.search(x.key(rec))
	if b == len(x.blocks) {
		// Past the last key: append to the last block, or start a new
		// one when it is full. Keys that come in order (a list from
		// etcd, names with a counter) fill their blocks so, where
		// splitting would leave every block half empty.
		b = len(x.blocks) - 1
		if b < 0 || len(x.blocks[b].recs) == blockSize {
			blk := block[R]{
				recs: append(make([]R, 0, blockSize), rec),
				live: append(make([]bool, 0, blockSize), live),
			}
			blk.nlive = countTrue(blk.live)
			x.blocks = append(x.blocks, blk)
			x.rebuild()
			return
		}
		i = len(x.blocks[b].recs)
	}
	blk := &x.blocks[b]
	blk.recs = slices.Insert(blk.recs, i, rec)
	blk.live = slices.Insert(blk.live, i, live)
	if live {
		blk.nlive++
		x.add(b, 1)
	}
	if len(blk.recs) <= blockSize {
		return
	}
	// Split in two halves, each with room to grow.
	half := len(blk.recs) / 2
	right := block[R]{
		recs: append(make([]R, 0, blockSize), blk.recs[half:]...),
		live: append(make([]bool, 0, blockSize), blk.live[half:]...),
	}
	clear(blk.recs[half:])
	blk.recs, blk.live = blk.recs[:half], blk.live[:half]
	blk.nlive = countTrue(blk.live)
	right.nlive = countTrue(right.live)
	x.blocks = slices.Insert(x.blocks, b+1, right)
	x.rebuild()
}

// Delete removes the record with key, if there is one.
func (x *Index[R]) Delete(key string) {
	b, i, ok := x.find(key)
	if !ok {
		return
	}
	x.n--
	blk := &x.blocks[b]
	if blk.live[i] {
		blk.nlive--
		x.add(b, -1)
	}
	blk.recs = slices.Delete(blk.recs, i, i+1)
	blk.live = slices.Delete(blk.live, i, i+1)
	if len(blk.recs) == 0 {
		x.blocks = slices.Delete(x.blocks, b, b+1)
		x.rebuild()
	}
}

// SetLive sets whether the record with key counts as live, if there is one.
func (x *Index[R]) SetLive(key string, live bool) {
	b, i, ok := x.find(key)
	if !ok || x.blocks[b].live[i] == live {
		return
	}
	x.blocks[b].live[i] = live
	d := 1
	if !live {
		d = -1
	}
	x.blocks[b].nlive += d
	x.add(b, d)
}

// DeleteFunc removes the records del reports, keeping the order.
func (x *Index[R]) DeleteFunc(del func(R) bool) {
	out := x.blocks[:0]
	x.n = 0
	for _, blk := range x.blocks {
		j := 0
		for i, r := range blk.recs {
			if !del(r) {
				blk.recs[j], blk.live[j] = r, blk.live[i]
				j++
			}
		}
		clear(blk.recs[j:])
		blk.recs, blk.live = blk.recs[:j], blk.live[:j]
		if j > 0 {
			blk.nlive = countTrue(blk.live)
			out = append(out, blk)
			x.n += j
		}
	}
	clear(x.blocks[len(out):])
	x.blocks = out
	x.rebuild()
}

// From yields the records from the first whose key is >= key, in order.
// The index must not change while the sequence runs.
func (x *Index[R]) From(key string) iter.Seq[R] {
	return func(yield func(R) bool) {
		b, i := x.search(key)
		for ; b < len(x.blocks); b, i = b+1, 0 {
			for _, r := range x.blocks[b].recs[i:] {
				if !yield(r) {
					return
				}
			}
		}
	}
}

// Len returns the number of records.
func (x *Index[R]) Len() int { return x.n }

// Live returns the number of live records.
func (x *Index[R]) Live() int { return x.nlive }

// Under yields the records whose key has prefix and is >= from, in order.
// It reads the keys of a binary search at each end only: the keys with a
// prefix are one run in key order, and a record's key is an allocation of
// its own, one cache miss each in a walk that checked every key (a fifth of
// a cached list's walk). The index must not change while the sequence runs.
func (x *Index[R]) Under(from, prefix string) iter.Seq[R] {
	return func(yield func(R) bool) {
		b, i := x.search(max(from, prefix))
		eb, ei := x.prefixEnd(prefix)
		for ; b < eb || b == eb && i < ei; b, i = b+1, 0 {
			recs := x.blocks[b].recs
			if b == eb {
				recs = recs[:ei]
			}
			for _, r := range recs[i:] {
				if !yield(r) {
					return
				}
			}
		}
	}
}

// prefixEnd returns the position after the last record whose key has
// prefix (or where it would be).
func (x *Index[R]) prefixEnd(prefix string) (b, i int) {
	// Below the keys with prefix, among them, above them.
	return x.searchFunc(func(k string) int {
		if strings.HasPrefix(k, prefix) {
			return -1
		}
		return strings.Compare(k, prefix)
	})
}

// CountLive returns the number of live records whose key has prefix and is
// >= from.
func (x *Index[R]) CountLive(from, prefix string) int {
	end := x.liveBefore(x.prefixEnd(prefix))
	return max(0, end-x.liveBefore(x.search(max(from, prefix))))
}

// liveBefore returns the number of live records before position (b, i).
func (x *Index[R]) liveBefore(b, i int) int {
	if b == len(x.blocks) {
		return x.nlive
	}
	n := x.prefix(b)
	blk := &x.blocks[b]
	// Read the shorter side of the block.
	if i <= len(blk.live)/2 {
		return n + countTrue(blk.live[:i])
	}
	return n + blk.nlive - countTrue(blk.live[i:])
}

// rebuild makes the Fenwick tree anew from the blocks' counts, in O(blocks).
func (x *Index[R]) rebuild() {
	x.fen = slices.Grow(x.fen[:0], len(x.blocks)+1)[:len(x.blocks)+1]
	clear(x.fen)
	x.nlive = 0
	for b := range x.blocks {
		x.nlive += x.blocks[b].nlive
		j := b + 1
		x.fen[j] += x.blocks[b].nlive
		if p := j + j&-j; p < len(x.fen) {
			x.fen[p] += x.fen[j]
		}
	}
}

// add adds d to block b's count in the tree.
func (x *Index[R]) add(b, d int) {
	x.nlive += d
	for j := b + 1; j < len(x.fen); j += j & -j {
		x.fen[j] += d
	}
}

// prefix returns the live count of the blocks before b.
func (x *Index[R]) prefix(b int) int {
	n := 0
	for j := b; j > 0; j -= j & -j {
		n += x.fen[j]
	}
	return n
}

func countTrue(live []bool) int {
	n := 0
	for _, l := range live {
		if l {
			n++
		}
	}
	return n
}
