package history

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/storage"
)

// TestListCounts checks unfiltered lists and their counts against a model
// that replays every write, over random puts and deletes, compactions and
// window evictions: pages at the latest and older revisions (whose count
// takes the log's changes back, or walks the keys when more changes than
// keys came since), their RemainingItemCount and their continue tokens,
// from the prefix's first key, a key within and a key below it. A count
// that drifts from the walk's, in the index or in the log's correction,
// fails here.
func TestListCounts(t *testing.T) {
	prefixes := []string{"/r/", "/r/a/", "/r/ab/", "/r/b/", "/r/a/x"}
	for _, tc := range []struct {
		name string
		keys int // how many distinct keys the writes choose from
		// window, when > 0, evicts the log down to that many changes
		// after each write, as the cache does; compactEvery compacts to a
		// recent revision every so many writes, as the memory store does.
		window, compactEvery int
		delPercent           int
	}{
		{"few keys, many deletes, a window", 40, 30, 0, 45},
		{"many keys, a large window", 400, 2000, 0, 20},
		{"compactions, no window", 300, 0, 97, 30},
		{"keys that come and go", 1500, 500, 0, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.keys), uint64(tc.window)))
			h := newHistory(t, Config{Root: "/r/"})
			key := func() string {
				i := rng.IntN(tc.keys)
				return fmt.Sprintf("%s%04d", prefixes[1+i%3], i)
			}
			// states[rev] is the model's state at rev: key -> value.
			states := map[int64]map[string]string{1: {}}
			cur := map[string]string{}
			for w := range 3000 {
				k := key()
				o := put(k, fmt.Sprint(w))
				if _, exists := cur[k]; exists && rng.IntN(100) < tc.delPercent {
					o = del(k)
				}
				apply(h, o)
				rev := h.Revision()
				if o.del {
					delete(cur, k)
				} else {
					cur[k] = o.value
				}
				states[rev] = maps.Clone(cur)
				h.Lock()
				if tc.window > 0 {
					h.EvictLocked(func(_ *Change[val], size int) bool { return size > tc.window }, 0)
				}
				if tc.compactEvery > 0 && w%tc.compactEvery == 0 {
					h.CompactLocked(rev - int64(rng.IntN(200)))
				}
				h.Unlock()
				if w%10 == 0 {
					checkCounts(t, rng, h, states, prefixes)
				}
			}
		})
	}
}

// checkCounts lists at a random held revision (0: the latest) under a
// random prefix, from a random key on, and pages through the rest.
func checkCounts(t *testing.T, rng *rand.Rand, h *History[val], states map[int64]map[string]string, prefixes []string) {
	t.Helper()
	h.RLock()
	floor, seen := h.floor, h.seen
	h.RUnlock()
	rev := int64(0)
	if rng.IntN(2) == 0 {
		rev = floor + rng.Int64N(seen-floor+1)
	}
	at := rev
	if at == 0 {
		at = seen
	}
	prefix := prefixes[rng.IntN(len(prefixes))]
	start := prefix
	switch rng.IntN(6) {
	case 0, 1:
		start = fmt.Sprintf("%s%04d", prefix, rng.IntN(2000))
	case 2:
		// A start below the prefix, with other prefixes' keys between:
		// the list starts at the prefix's first key.
		start = "/r/"
	}
	var want []string
	for k := range states[at] {
		if strings.HasPrefix(k, prefix) && k >= start {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	if n := h.count(prefix, start, at); n != int64(len(want)) {
		t.Fatalf("count of %s from %s at %d = %d, want %d", prefix, start, at, n, len(want))
	}
	limit := int64(1 + rng.IntN(60))
	var got []string
	for page := 0; ; page++ {
		res, ok, err := h.List(prefix, start, rev, limit, storage.Predicate{})
		if err != nil || !ok {
			t.Fatalf("List(%s from %s at %d): %v, %v", prefix, start, rev, ok, err)
		}
		if res.Revision != at {
			t.Fatalf("page %d at %d, want %d", page, res.Revision, at)
		}
		for _, kv := range res.Items {
			got = append(got, kv.Key)
			if v := states[at][kv.Key]; v != string(kv.Value) {
				t.Fatalf("%s at %d = %q, want %q", kv.Key, at, kv.Value, v)
			}
		}
		left := int64(len(want) - len(got))
		switch {
		case left > 0 && (res.Continue == "" || res.RemainingItemCount == nil || *res.RemainingItemCount != left):
			t.Fatalf("page %d of %s at %d (limit %d): continue %q, RemainingItemCount %s; want %d more", page, prefix, at, limit, res.Continue, showCount(res.RemainingItemCount), left)
		case left <= 0 && (res.Continue != "" || res.RemainingItemCount != nil):
			t.Fatalf("last page %d of %s at %d: continue %q, RemainingItemCount %s; want none", page, prefix, at, res.Continue, showCount(res.RemainingItemCount))
		case left <= 0:
			if !slices.Equal(got, want) {
				t.Fatalf("pages of %s from %s at %d = %v, want %v", prefix, start, at, got, want)
			}
			return
		}
		next, tokRev, err := storage.DecodeContinue(res.Continue, prefix)
		if err != nil || tokRev != at || next != got[len(got)-1]+"\x00" {
			t.Fatalf("continue token of page %d: %q at %d, %v; want %q at %d", page, next, tokRev, err, got[len(got)-1]+"\x00", at)
		}
		start, rev = next, at
	}
}

// count is countLocked under the lock.
func (h *History[V]) count(prefix, start string, rev int64) int64 {
	h.RLock()
	defer h.RUnlock()
	return h.countLocked(prefix, start, rev)
}

func showCount(n *int64) string {
	if n == nil {
		return "none"
	}
	return fmt.Sprint(*n)
}

// TestPageWalksItsItemsOnly: a page of an unfiltered list costs about the
// same wherever it starts, as its count of the items after it comes from
// the index. Counting by a walk made the first page of 100,000 keys
// thousands of times dearer than the last. Timing, with a wide margin: the
// fastest of many tries of each.
func TestPageWalksItsItemsOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 100,000 keys")
	}
	h := newHistory(t, Config{Root: "/r/"})
	h.Lock()
	v := newVal("x")
	for i := range 100000 {
		h.PutLocked(fmt.Sprintf("/r/%06d", i), int64(i+2), v, false)
	}
	h.Unlock()
	fastest := func(start string) time.Duration {
		best := time.Hour
		for range 200 {
			t0 := time.Now()
			res, ok, err := h.List("/r/", start, 0, 10, storage.Predicate{})
			d := time.Since(t0)
			if err != nil || !ok || len(res.Items) == 0 {
				t.Fatalf("List from %s: %d items, %v, %v", start, len(res.Items), ok, err)
			}
			best = min(best, d)
		}
		return best
	}
	first, last := fastest("/r/"), fastest("/r/099990")
	if first > 50*last {
		t.Fatalf("the first page of 100,000 keys took %v, the last %v: the page walked the keys after it", first, last)
	}
	t.Logf("first page %v, last %v", first, last)
}
