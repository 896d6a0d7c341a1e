package endpoints_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// BenchmarkListHandler measures the list handler (routing included, filters
// not) writing 1,000 objects, as JSON and as a Table.
func BenchmarkListHandler(b *testing.B) {
	ts := newTestServer(b)
	ctx := context.Background()
	for i := range 1000 {
		w := &Widget{ObjectMeta: meta.ObjectMeta{Name: fmt.Sprintf("w%04d", i), Labels: map[string]string{"app": "demo"}}}
		w.Spec.Size = i
		w.Spec.Owner = "team-a"
		w.Spec.Parts = []Part{{Name: "a", Count: 1}, {Name: "b", Count: 2}}
		if _, err := ts.widgets.Create(ctx, "ns", w, registry.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	h := ts.srv.UnprotectedHandler()
	for _, tc := range []struct{ name, accept string }{{"json", ""}, {"table", tableV1}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				r := httptest.NewRequest("GET", ns, nil)
				if tc.accept != "" {
					r.Header.Set("Accept", tc.accept)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				if rec.Code != 200 {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
				size = rec.Body.Len()
			}
			b.SetBytes(int64(size))
		})
	}
}
