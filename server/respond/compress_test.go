package respond_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/apikit-dev/apikit/server/respond"
)

func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		acceptEncoding []string
		want           bool
	}{
		{nil, false},
		{[]string{"gzip"}, true},
		{[]string{"gzip, deflate, br"}, true},
		{[]string{"br,  gzip "}, true},
		{[]string{"deflate", "gzip"}, true},
		{[]string{"deflate, br"}, false},
		{[]string{"x-gzip"}, false},
		// kube-apiserver matches the bare token only.
		{[]string{"gzip;q=1.0"}, false},
		{[]string{"identity"}, false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		for _, v := range tc.acceptEncoding {
			r.Header.Add("Accept-Encoding", v)
		}
		if got := respond.AcceptsGzip(r); got != tc.want {
			t.Errorf("Accept-Encoding %q: %v, want %v", tc.acceptEncoding, got, tc.want)
		}
	}
}

func TestBodyCompressesLargeResponses(t *testing.T) {
	for _, tc := range []struct {
		name           string
		size           int
		acceptEncoding string
		compressed     bool
	}{
		{"small", 1 << 10, "gzip", false},
		{"at the threshold", respond.GzipThreshold, "gzip", false},
		{"over the threshold", respond.GzipThreshold + 1, "gzip", true},
		{"large", 2 << 20, "gzip, deflate", true},
		{"large, gzip not accepted", 2 << 20, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := bytes.Repeat([]byte(`{"metadata":{"name":"f"}},`), tc.size/26+1)[:tc.size]
			r := httptest.NewRequest("GET", "/apis/g/v/things", nil)
			if tc.acceptEncoding != "" {
				r.Header.Set("Accept-Encoding", tc.acceptEncoding)
			}
			rec := httptest.NewRecorder()
			respond.Body(rec, r, http.StatusOK, "application/json", body)
			res := rec.Result()
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %q", res.StatusCode, res.Header.Get("Content-Type"))
			}
			got := rec.Body.Bytes()
			if !tc.compressed {
				if res.Header.Get("Content-Encoding") != "" || res.Header.Get("Content-Length") != strconv.Itoa(tc.size) || !bytes.Equal(got, body) {
					t.Errorf("uncompressed: Content-Encoding %q, Content-Length %q, body changed: %v",
						res.Header.Get("Content-Encoding"), res.Header.Get("Content-Length"), !bytes.Equal(got, body))
				}
				return
			}
			if res.Header.Get("Content-Encoding") != "gzip" || res.Header.Get("Vary") != "Accept-Encoding" || res.Header.Get("Content-Length") != "" {
				t.Errorf("headers %v", res.Header)
			}
			zr, err := gzip.NewReader(bytes.NewReader(got))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(plain, body) {
				t.Fatalf("decompressed %d bytes (%v), want the %d sent", len(plain), err, len(body))
			}
			if len(got) >= len(body)/4 {
				t.Errorf("%d bytes compressed to %d", len(body), len(got))
			}
		})
	}
}

// TestStartGzipPieces: a body written in pieces of every size, from the
// two bytes a LIST writes between items to more than the compressor's
// input buffer, decodes (with the standard library's reader) to the
// pieces in order.
func TestStartGzipPieces(t *testing.T) {
	piece := func(n int) []byte { return bytes.Repeat([]byte(`{"metadata":{"name":"flunder"}},`), n/32+1)[:n] }
	for _, tc := range []struct {
		name  string
		sizes []int
	}{
		{"small pieces", []int{2, 500, 2, 31, 2, 500, 7}},
		{"a piece larger than the buffer", []int{2, 40 << 10, 3}},
		{"pieces across the buffer's end", []int{16<<10 - 1, 2, 16 << 10, 16<<10 + 1, 1}},
		{"one large piece", []int{300 << 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []byte
			rec := httptest.NewRecorder()
			z := respond.StartGzip(rec, http.StatusOK)
			for range 40 {
				for _, n := range tc.sizes {
					p := piece(n)
					want = append(want, p...)
					if m, err := z.Write(p); m != n || err != nil {
						t.Fatalf("Write of %d = %d, %v", n, m, err)
					}
				}
			}
			if err := z.Close(); err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("decoded %d bytes (%v), want the %d written", len(got), err, len(want))
			}
		})
	}
}
