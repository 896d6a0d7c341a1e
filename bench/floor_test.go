package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestFloorHandler(t *testing.T) {
	get := []byte(`{"kind":"Flunder"}`)
	list := bytes.Repeat([]byte("x"), floorGzipThreshold+1)
	pages := map[string][]byte{"": []byte(`{"page":1}`), "tok2": []byte(`{"page":2}`)}
	h := floorHandler(get, list, pages)
	for _, tc := range []struct {
		name, method, path, encoding string
		code                         int
		want                         []byte
		gzipped                      bool
	}{
		{"readyz", http.MethodGet, "/readyz", "", http.StatusOK, []byte("ok"), false},
		{"get", http.MethodGet, collection + "/flunder-00001", "gzip", http.StatusOK, get, false},
		{"list gzipped", http.MethodGet, collection, "gzip", http.StatusOK, list, true},
		{"list identity", http.MethodGet, collection, "identity", http.StatusOK, list, false},
		{"first page", http.MethodGet, collection + "?limit=500", "gzip", http.StatusOK, pages[""], false},
		{"next page", http.MethodGet, collection + "?limit=500&continue=tok2", "gzip", http.StatusOK, pages["tok2"], false},
		{"unknown page", http.MethodGet, collection + "?limit=500&continue=nope", "gzip", http.StatusNotFound, nil, false},
		{"other path", http.MethodGet, "/apis", "", http.StatusNotFound, nil, false},
		{"not a GET", http.MethodPost, collection, "", http.StatusNotFound, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.encoding != "" {
				r.Header.Set("Accept-Encoding", tc.encoding)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.code {
				t.Fatalf("code %d, want %d", w.Code, tc.code)
			}
			if tc.code != http.StatusOK {
				return
			}
			body := w.Body.Bytes()
			if got := w.Header().Get("Content-Encoding") == "gzip"; got != tc.gzipped {
				t.Fatalf("gzipped %v, want %v", got, tc.gzipped)
			}
			if tc.gzipped {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(body, tc.want) {
				t.Fatalf("body of %d bytes, want %d", len(body), len(tc.want))
			}
		})
	}
}

func TestFloorRows(t *testing.T) {
	if got := (floorFigures{}).rows(); got != "" {
		t.Fatalf("rows without a floor run = %q, want none", got)
	}
	f := floorFigures{get: []float64{0.1, 0.12, 0.11}, list: []float64{8, 9, 10}, paged: []float64{12, 11, 13},
		sampleGet: 0.5, sampleList: 40, samplePaged: 60, getTarget: 0.2, listTarget: 0.15, pagedTarget: 0.2}
	got := f.rows()
	for _, want := range []string{
		"| transport floor: GET server CPU per op (ms) | 0.110 | | floor/sample 0.22 | apikit's target 0.20 | |",
		"| transport floor: full LIST server CPU (ms) | 9.0 | | floor/sample 0.23 | apikit's target 0.15 | |",
		"| transport floor: paged LIST server CPU (ms) | 12.0 | | floor/sample 0.20 | apikit's target 0.20 | |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rows:\n%s\nwant a row %s", got, want)
		}
	}
}
