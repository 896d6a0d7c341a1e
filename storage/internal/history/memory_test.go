package history

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/apikit-dev/apikit/storage"
)

// pval is a value held by pointer, as the watch cache holds its values.
type pval struct {
	data []byte
	memo *storage.Memo
}

func (v *pval) Data() []byte        { return v.data }
func (v *pval) Memo() *storage.Memo { return v.memo }
func (v *pval) KeyValue(key string, rev int64) storage.KeyValue {
	return storage.KeyValue{Key: key, Value: v.data, Revision: rev, Memo: v.memo}
}

// TestMemoryPerKey measures what the history itself keeps per key (its
// records, index, map and log, not the keys' bytes nor the values, which
// its owner made) in the watch cache's regimes: every change still in the
// window (the load benchmark's 5,000 objects after their creates, and
// after two more writes each, within the dynamic window's 75 s), and a
// window that kept only the latest change of each key (whose record keeps
// the version before it too, for reads at the window's floor). Of what is
// left, a change is 48 bytes, a record 64 with its newest version, the map
// ~50 a key, the index ~9.
func TestMemoryPerKey(t *testing.T) {
	const n = 8192
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("/registry/wardle.example.com/flunders/bench/flunder-%05d", i)
	}
	vals := make([]*pval, 3*n)
	for i := range vals {
		vals[i] = &pval{data: []byte("x"), memo: storage.NewMemo()}
	}
	for _, tc := range []struct {
		name   string
		writes int // per key, one after the other for all keys
		window int // changes the log keeps; 0: all
		max    float64
	}{
		// 213, 431 and 295 bytes before the newest version moved into the
		// record, the kind into the change's stamp, and keys in order
		// filled the index's blocks; 167, 315 and 222 since.
		{"one write, all in the window", 1, 0, 185},
		{"three writes, all in the window", 3, 0, 350},
		{"three writes, only the latest in the window", 3, n, 250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			retained := func() float64 {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				h := New[*pval](Config{Root: "/registry/", Timestamps: true})
				h.Install(nil, 1)
				h.Lock()
				for w := range tc.writes {
					for i, k := range keys {
						h.PutLocked(k, h.seen+1, vals[w*n+i], false)
						if tc.window > 0 {
							h.EvictLocked(func(_ *Change[*pval], size int) bool { return size > tc.window }, 0)
						}
					}
				}
				h.Unlock()
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(h)
				return float64(after.HeapAlloc) - float64(before.HeapAlloc)
			}
			var got []float64
			for range 3 {
				got = append(got, retained())
			}
			perKey := slices.Min(got) / n
			t.Logf("%.0f bytes per key", perKey)
			if perKey > tc.max {
				t.Errorf("the history keeps %.0f bytes per key, want at most %.0f", perKey, tc.max)
			}
		})
	}
	runtime.KeepAlive(keys)
	runtime.KeepAlive(vals)
}
