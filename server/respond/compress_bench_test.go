package respond_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"

	"github.com/apikit-dev/apikit/internal/proccpu"
	"github.com/apikit-dev/apikit/server/respond"
)

// flunderList is the JSON of a LIST of n Flunders as the load benchmark
// stores them (one managedFields entry each): ~490 bytes an item.
func flunderList(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"kind":"FlunderList","apiVersion":"wardle.example.com/v1beta1","metadata":{"resourceVersion":"123456"},"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"kind":"Flunder","apiVersion":"wardle.example.com/v1beta1","metadata":{"name":"flunder-%06d","namespace":"bench","uid":"%08x-1c2d-4e5f-8a9b-%012x","resourceVersion":"%d","generation":1,"creationTimestamp":"2026-12-01T15:%02d:%02dZ","managedFields":[{"manager":"bench","operation":"Update","apiVersion":"wardle.example.com/v1beta1","time":"2026-12-01T15:%02d:%02dZ","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:reference":{}}}}]},"spec":{"reference":"ref-%d"},"status":{}}`,
			i, i*7919, i*104729, 1000+i, i%60, i%59, i%60, i%59, i)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// discard is a ResponseWriter that counts what reaches the connection.
type discard struct {
	h http.Header
	n int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }

// BenchmarkGzipList compresses a LIST of 5,000 Flunders (2.4 MB) written
// an item at a time, as a LIST handler writes it: as responses are
// compressed ("served"); with the same compressor written to directly, as
// responses were before their writes were gathered into pieces of 16 KiB
// ("unbuffered"); and, for comparison, with the standard library's
// compress/gzip at the same level 1 that kube-apiserver (and the
// sample-apiserver) use. cpu-ms/op is the process's CPU per LIST, the
// figure that counts on a busy machine.
func BenchmarkGzipList(b *testing.B) {
	body := flunderList(5000)
	items := splitItems(body)
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	b.Run("served", func(b *testing.B) {
		w := &discard{h: http.Header{}}
		measure(b, len(body), func() int {
			w.n = 0
			z := respond.StartGzip(w, http.StatusOK)
			for _, it := range items {
				_, _ = z.Write(it)
			}
			_ = z.Close()
			return w.n
		})
	})
	b.Run("unbuffered", func(b *testing.B) {
		z, _ := kgzip.NewWriterLevel(nil, kgzip.BestSpeed)
		w := &discard{}
		measure(b, len(body), func() int {
			w.n = 0
			out := bufio.NewWriterSize(w, respond.WriteSize)
			z.Reset(out)
			for _, it := range items {
				_, _ = z.Write(it)
			}
			_ = z.Close()
			_ = out.Flush()
			return w.n
		})
	})
	b.Run("stdlib", func(b *testing.B) {
		z, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
		w := &discard{}
		measure(b, len(body), func() int {
			w.n = 0
			z.Reset(w)
			for _, it := range items {
				_, _ = z.Write(it)
			}
			_ = z.Close()
			return w.n
		})
	})
}

// splitItems cuts a list into the writes a LIST handler makes: the head,
// then each item and each comma between them, then the tail.
func splitItems(list []byte) [][]byte {
	var parts [][]byte
	head := bytes.Index(list, []byte(`"items":[`)) + len(`"items":[`)
	parts = append(parts, list[:head])
	rest := list[head : len(list)-2]
	for len(rest) > 0 {
		end := bytes.Index(rest, []byte(`},{"kind"`))
		if end < 0 {
			parts = append(parts, rest)
			break
		}
		parts = append(parts, rest[:end+1], rest[end+1:end+2])
		rest = rest[end+2:]
	}
	return append(parts, list[len(list)-2:])
}

func measure(b *testing.B, size int, op func() int) {
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var wire int
	start := proccpu.Used()
	for b.Loop() {
		wire = op()
	}
	b.ReportMetric(float64(proccpu.Used()-start)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(wire), "wire-bytes/op")
}
