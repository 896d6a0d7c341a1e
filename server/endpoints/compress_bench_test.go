package endpoints_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/cacher"
	"github.com/apikit-dev/apikit/storage/memory"
)

// BenchmarkListFlunders5000Gzip serves a full LIST of 5,000 Flunders from
// the watch cache as is and gzip-compressed (what kubectl and client-go
// get, since they accept gzip): wire-bytes/op is what goes to the
// connection, cpu-ns/op what it costs.
func BenchmarkListFlunders5000Gzip(b *testing.B) {
	mem := memory.New()
	b.Cleanup(func() { mem.Close() })
	c := cacher.New(mem, storage.KeyRoot(flunders))
	b.Cleanup(func() { c.Close() })
	st := benchStore(b, c)
	fillFlunders(b, st, 5000)
	h := benchHandler(st)
	for _, enc := range []string{"identity", "gzip"} {
		b.Run(enc, func(b *testing.B) {
			serveEncoded := func() int {
				r := httptest.NewRequest("GET", flundersPath, nil)
				r.Header.Set("Accept-Encoding", enc)
				w := &countingWriter{header: http.Header{}}
				h.ServeHTTP(w, r)
				if w.code != http.StatusOK {
					b.Fatalf("GET %s: %d %s", flundersPath, w.code, w.first)
				}
				if got := w.header.Get("Content-Encoding"); (got == "gzip") != (enc == "gzip") {
					b.Fatalf("Content-Encoding %q for Accept-Encoding %s", got, enc)
				}
				return w.n
			}
			n := serveEncoded()
			b.ReportAllocs()
			loop(b, func() { serveEncoded() })
			b.ReportMetric(float64(n), "wire-bytes/op")
		})
	}
}
