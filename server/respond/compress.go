package respond

import (
	"bufio"
	"github.com/klauspost/compress/gzip"
	"io"
	"net/http"
	"strings"
)

// GzipThreshold is the size of a response body above which it is
// gzip-compressed for a client that accepts gzip: kube-apiserver's
// (APIResponseCompression). Smaller bodies are not worth the CPU.
const GzipThreshold = 128 << 10

// WriteSize is the size of the writes a buffered response makes to the
// connection: the largest HTTP/2 DATA payload whose frame (9 bytes of
// header) fits one TLS record (16 KiB of plaintext). Each write of a
// handler becomes its own frames, and each frame its own TLS records and
// write syscalls: 32 KiB writes went out as frames of 16 KiB + 9 bytes,
// two records and two syscalls each, which cost a large LIST a fifth of its
// CPU. Over HTTP/1.1 the size is as good as any.
const WriteSize = 16<<10 - 9

// AcceptsGzip reports whether r's Accept-Encoding lists gzip, read as
// kube-apiserver reads it: one of its comma-separated elements is exactly
// "gzip" (a q parameter is not honoured, "gzip;q=0" is not gzip).
func AcceptsGzip(r *http.Request) bool {
	for _, e := range r.Header.Values("Accept-Encoding") {
		for token := range strings.SplitSeq(e, ",") {
			if strings.TrimSpace(token) == "gzip" {
				return true
			}
		}
	}
	return false
}

// Compress reports whether a response body of size bytes to r is to be
// gzip-compressed: when it is larger than GzipThreshold and r accepts gzip.
// Watches never are: their events must reach the client as they happen.
func Compress(r *http.Request, size int) bool {
	return r != nil && size > GzipThreshold && AcceptsGzip(r)
}

// StartGzip writes the header of a gzip-compressed response with code
// (Content-Encoding: gzip, Vary: Accept-Encoding, and no Content-Length,
// since the compressed size is not known yet), and returns the writer of
// its body. The caller sets the other headers first, and closes the writer
// after the last write, which ends the compressed stream.
func StartGzip(w http.ResponseWriter, code int) io.WriteCloser {
	h := w.Header()
	h.Set("Content-Encoding", "gzip")
	h.Add("Vary", "Accept-Encoding")
	h.Del("Content-Length")
	w.WriteHeader(code)
	z := getGzipWriter()
	// deflate writes its output a few hundred bytes at a time: the
	// buffer turns them into writes of WriteSize.
	z.buf.Reset(w)
	z.gz.Reset(z.buf)
	z.in.Reset(z.gz)
	return z
}

// gzipWriter compresses at level 1 (BestSpeed), as kube-apiserver does: the
// least CPU, for a ratio within a few tens of percent of the best. It is
// github.com/klauspost/compress's gzip rather than the standard library's
// (kube-apiserver's): the same format at 0.6 of the CPU and 6% fewer bytes
// for a LIST of 5,000 Flunders (BenchmarkGzipList), since gzip is most of
// what a large LIST costs.
//
// Writes reach the compressor in pieces of gzipInSize (a larger one goes
// through as it is): a LIST writes each item in two to four pieces, from a
// two-byte ",{" up, and the compressor's per-call cost (its CRC-32 of
// small pieces most) made those writes cost more CPU than the copy into
// this buffer: 4% for two pieces an item (BenchmarkGzipList, "served"
// against "unbuffered"), 12-18% for four.
type gzipWriter struct {
	in  *bufio.Writer
	gz  *gzip.Writer
	buf *bufio.Writer
}

// gzipInSize is the size of the writes to the compressor. 32 KiB itself
// measured 1.3-2.5x slower than 32 KiB - 1 or 16 KiB (an aliasing of the
// buffer with the compressor's 64 KiB window, presumably).
const gzipInSize = 16 << 10

// gzipWritersKept is how many idle writers are kept for the next
// responses. A writer holds ~700 KiB (deflate's history and hash table,
// 16 KiB of input): a sync.Pool kept every writer a burst of compressed
// responses had in flight until two collections passed (8 at once kept
// 6.2 MiB), where the next responses, one or two at a time as a rule,
// reuse one or two; a response beyond makes a writer that is then
// dropped.
const gzipWritersKept = 2

var gzipWriters = make(chan *gzipWriter, gzipWritersKept)

func getGzipWriter() *gzipWriter {
	select {
	case z := <-gzipWriters:
		return z
	default:
	}
	gz, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a valid level: no error
	return &gzipWriter{in: bufio.NewWriterSize(nil, gzipInSize), gz: gz, buf: bufio.NewWriterSize(nil, WriteSize)}
}

func putGzipWriter(z *gzipWriter) {
	select {
	case gzipWriters <- z:
	default:
	}
}

func (z *gzipWriter) Write(p []byte) (int, error) { return z.in.Write(p) }

// Close ends the stream, flushes it to the connection and returns the
// writer to the pool.
func (z *gzipWriter) Close() error {
	err := z.in.Flush()
	if cerr := z.gz.Close(); err == nil {
		err = cerr
	}
	if ferr := z.buf.Flush(); err == nil {
		err = ferr
	}
	z.in.Reset(nil)
	z.gz.Reset(nil)
	z.buf.Reset(nil)
	putGzipWriter(z)
	return err
}

// Body writes body with a content type and status code, as Raw does, but
// gzip-compressed when Compress says so for r.
func Body(w http.ResponseWriter, r *http.Request, code int, contentType string, body []byte) {
	if !Compress(r, len(body)) {
		Raw(w, code, contentType, body)
		return
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	z := StartGzip(w, code)
	_, _ = z.Write(body)
	_ = z.Close() // a failed write means the client went away
}

// Object writes v as JSON, as JSON does, but gzip-compressed when Compress
// says so for r.
func Object(w http.ResponseWriter, r *http.Request, code int, v any) {
	body, err := encode(v)
	if err != nil {
		Error(w, r, err)
		return
	}
	Body(w, r, code, "application/json", body)
}
