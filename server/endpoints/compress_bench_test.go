package endpoints_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"testing"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/cacher"
	"github.com/apikit-dev/apikit/storage/memory"
)

// BenchmarkListFlunders5000Gzip serves a full LIST of 5,000 Flunders from
// the watch cache as is and gzip-compressed (what kubectl and client-go
// get, since they accept gzip), and the same in ten pages of 500 (the load
// benchmark's paged LIST): wire-bytes/op is what goes to the connection,
// cpu-ns/op what it costs, per LIST of all 5,000.
func BenchmarkListFlunders5000Gzip(b *testing.B) {
	mem := memory.New()
	b.Cleanup(func() { mem.Close() })
	c := cacher.New(mem, storage.KeyRoot(flunders))
	b.Cleanup(func() { c.Close() })
	st := benchStore(b, c)
	fillFlunders(b, st, 5000)
	h := benchHandler(st)
	// The pages' paths, with the continue tokens an uncompressed pass
	// gives: nothing is written meanwhile, so they stay valid and the
	// compressed pages need not be decoded to follow them.
	pages := []string{flundersPath + "?limit=500"}
	for {
		token := continueToken(b, serveHead(b, h, pages[len(pages)-1]))
		if token == "" {
			break
		}
		if len(pages) == 10 {
			b.Fatal("more than 10 pages of 500 for 5000 objects")
		}
		pages = append(pages, flundersPath+"?limit=500&continue="+url.QueryEscape(token))
	}
	for _, c := range []struct {
		enc   string
		paths []string
	}{{"identity", []string{flundersPath}}, {"gzip", []string{flundersPath}}, {"paged/identity", pages}, {"paged/gzip", pages}} {
		enc := c.enc[strings.LastIndexByte(c.enc, '/')+1:]
		b.Run(c.enc, func(b *testing.B) {
			serveEncoded := func(p string) int {
				r := httptest.NewRequest("GET", p, nil)
				r.Header.Set("Accept-Encoding", enc)
				w := &countingWriter{header: http.Header{}}
				h.ServeHTTP(w, r)
				if w.code != http.StatusOK {
					b.Fatalf("GET %s: %d %s", p, w.code, w.first)
				}
				if got := w.header.Get("Content-Encoding"); (got == "gzip") != (enc == "gzip") {
					b.Fatalf("Content-Encoding %q for Accept-Encoding %s", got, enc)
				}
				return w.n
			}
			serveAll := func() (n int) {
				for _, p := range c.paths {
					n += serveEncoded(p)
				}
				return n
			}
			n := serveAll()
			b.ReportAllocs()
			loop(b, func() { serveAll() })
			b.ReportMetric(float64(n), "wire-bytes/op")
		})
	}
}
