package endpoints_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestLargeResponsesCompressed: a response over 128 KiB is gzip-compressed
// for a client that accepts gzip, as kube-apiserver's APIResponseCompression
// does (kubectl and client-go ask for it); smaller ones and watches are not.
func TestLargeResponsesCompressed(t *testing.T) {
	ts := newTestServer(t)
	// Compressible, as real objects are, and 60 KiB each once encoded.
	blob := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("flunder "), 45<<10/8))
	for _, name := range []string{"a", "b", "c"} {
		ts.create(t, name, `{"blob":"`+blob+`"}`)
	}
	ts.create(t, "small", "")
	_, plainList := ts.do(t, req{method: "GET", path: ns, acceptEncoding: "identity"})
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io"
	for _, tc := range []struct {
		name, path, accept, acceptEncoding string
		compressed                         bool
	}{
		{"list", ns, "", "gzip", true},
		{"list, gzip among others", ns, "", "deflate, gzip, br", true},
		{"list, gzip not accepted", ns, "", "identity", false},
		{"list as a table", ns + "?includeObject=Object", table, "gzip", true},
		{"list as YAML", ns, "application/yaml", "gzip", true},
		{"a page under the threshold", ns + "?limit=1", "", "gzip", false},
		{"a small object", ns + "/small", "", "gzip", false},
		{"a watch", ns + "?watch=true&timeoutSeconds=1&resourceVersion=0", "", "gzip", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := ts.do(t, req{method: "GET", path: tc.path, accept: tc.accept, acceptEncoding: tc.acceptEncoding})
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if enc := resp.Header.Get("Content-Encoding"); (enc == "gzip") != tc.compressed || (enc != "" && enc != "gzip") {
				t.Fatalf("Content-Encoding %q, want compressed %v (%d bytes)", enc, tc.compressed, len(b))
			}
			if !tc.compressed {
				if tc.name == "a watch" && !strings.Contains(string(b), `"type":"ADDED"`) {
					t.Errorf("watch events: %.200s", b)
				}
				return
			}
			if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") || resp.Header.Get("Content-Length") != "" {
				t.Errorf("headers %v", resp.Header)
			}
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if len(b)*4 > len(plain) {
				t.Errorf("%d bytes compressed to %d", len(plain), len(b))
			}
			if tc.accept == "" && !bytes.Equal(plain, plainList) {
				t.Errorf("the compressed list is not the list:\n%.300s\n%.300s", plain, plainList)
			}
			if tc.accept == table && !json.Valid(plain) {
				t.Errorf("table: %.300s", plain)
			}
		})
	}
}
