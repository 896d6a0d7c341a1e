package registry_test

import (
	"context"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// BenchmarkItemJSON measures Item.JSON for an item read from storage (its
// encoding is kept in the stored value's memo after the first call) and for
// one just written (no memo: encoded every time).
func BenchmarkItemJSON(b *testing.B) {
	st, _ := newWidgets(b)
	ctx := context.Background()
	w := widget("ns", "w", 3)
	w.Labels = map[string]string{"app": "demo", "tier": "backend"}
	w.Annotations = map[string]string{"note": "a <b> & c"}
	created := mustCreate(b, st, w)
	res := registry.Serve(st)
	read, err := res.Get(ctx, "ns", "w", meta.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	written, err := res.Create(ctx, "ns", widget("ns", "w2", 1), registry.WriteOptions{})
	if err != nil {
		b.Fatal(err)
	}
	_ = created
	for _, tc := range []struct {
		name string
		it   registry.Item
	}{{"memoized", read}, {"fresh", written}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.it.JSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
