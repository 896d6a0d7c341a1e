package endpoints_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/cacher"
	"github.com/apikit-dev/apikit/storage/memory"
)

// BenchmarkListItemsJSON is the first pass of a full LIST of 5,000 cached
// Flunders: the list from the watch cache and each item's JSON from its
// value's memo, nothing written. The values are made among other
// allocations, as a server's are among its requests', and each read
// once (the Flunders and their memos made one after another would sit
// side by side in memory, which hides what the memo's layout costs in
// cache misses).
func BenchmarkListItemsJSON(b *testing.B) {
	mem := memory.New()
	b.Cleanup(func() { mem.Close() })
	c := cacher.New(mem, storage.KeyRoot(flunders))
	b.Cleanup(func() { c.Close() })
	st := benchStore(b, c)
	res := registry.Serve(st)
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(1, 2))
	var ballast [][]byte
	for i := range 5000 {
		f := benchFlunder(i)
		if _, err := st.Create(ctx, f.Namespace, f, registry.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
		// Its JSON is made on a first read, as the load benchmark's GETs
		// make it, among their own allocations.
		it, err := res.Get(ctx, f.Namespace, f.Name, meta.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := it.JSON(); err != nil {
			b.Fatal(err)
		}
		for range 8 {
			ballast = append(ballast, make([]byte, 64+rnd.IntN(2048)))
		}
	}
	items := func() int {
		list, err := res.List(ctx, "", meta.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, it := range list.Items {
			p, _, err := it.JSONPartsTyped()
			if err != nil {
				b.Fatal(err)
			}
			n += p.Len()
		}
		return n
	}
	if n := items(); n == 0 {
		b.Fatal("no JSON")
	}
	b.ReportAllocs()
	loop(b, func() { items() })
	b.ReportMetric(float64(len(ballast)), "ballast")
}
